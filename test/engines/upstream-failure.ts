import { expect } from "vitest";
import { UpstreamError } from "../../src/engines/types.ts";

/** The UpstreamError a call rejects with (the test fails when it resolves or throws anything else). */
export async function failure(promise: Promise<unknown>): Promise<UpstreamError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(UpstreamError);
  return error as UpstreamError;
}

import { CliFailure } from "./cli-errors.ts";
import type { OperatorClient } from "./operator-client.ts";

/** An ACCOUNT argument is an account id or an email address; emails are looked up like `GET /accounts?email=`. */
export async function resolveAccount(client: OperatorClient, reference: string): Promise<string> {
  if (!reference.includes("@")) return reference;
  const found = await client.listAccounts({ email: reference });
  const id = found.data[0]?.id;
  if (!id) throw new CliFailure(`Account with the email ${reference} not found.`, "not_found");
  return id;
}

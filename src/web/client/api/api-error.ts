/** An answer of the app API that is not a success, in its shape (docs/app-auth.md#errors). */
export class ApiError extends Error {
  readonly status: number;
  /** `error.code` of the body; `not_found` for a 404 `{message}`; `network` when no answer came. */
  readonly code: string;
  /** Messages by field of a 422 `validation_error`. */
  readonly fields: Record<string, string[]>;
  /** Seconds to wait, from `Retry-After` of a 429. */
  readonly retryAfter: number | undefined;

  constructor(
    status: number,
    code: string,
    message: string,
    fields: Record<string, string[]> = {},
    retryAfter?: number,
  ) {
    super(message);
    this.status = status;
    this.code = code;
    this.fields = fields;
    this.retryAfter = retryAfter;
  }

  /** Reads an error answer of the app API. */
  static async from(response: Response): Promise<ApiError> {
    let body: { message?: unknown; error?: { code?: unknown; message?: unknown }; errors?: unknown } = {};
    try {
      body = (await response.json()) as typeof body;
    } catch {
      // Not JSON (a proxy's page): the status says enough.
    }
    const code =
      typeof body.error?.code === "string"
        ? body.error.code
        : response.status === 404
          ? "not_found"
          : `http_${response.status}`;
    const message =
      typeof body.error?.message === "string"
        ? body.error.message
        : typeof body.message === "string"
          ? body.message
          : response.statusText;
    const fields =
      typeof body.errors === "object" && body.errors !== null
        ? (body.errors as Record<string, string[]>)
        : {};
    const retry = Number(response.headers.get("retry-after"));
    return new ApiError(
      response.status,
      code,
      message,
      fields,
      Number.isFinite(retry) && retry > 0 ? retry : undefined,
    );
  }
}

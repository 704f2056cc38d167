/** The command line itself is wrong (exit code 2); `helpFor` names the command whose help to point to. */
export class UsageError extends Error {
  override name = "UsageError";
  readonly helpFor: string;
  constructor(message: string, helpFor = "zona") {
    super(message);
    this.helpFor = helpFor;
  }
}

/** The operation failed (exit code 1); `code` is the API's error code when there is one. */
export class CliFailure extends Error {
  override name = "CliFailure";
  readonly code: string | undefined;
  constructor(message: string, code?: string) {
    super(message);
    this.code = code;
  }
}

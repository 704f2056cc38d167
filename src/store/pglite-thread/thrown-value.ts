// PGlite's file system (Emscripten's) throws `ErrnoError` objects that are not Errors and carry
// only a number: without this, an operator read "[object Object]" for a data folder it cannot use.
const ERRNO: Record<number, string> = {
  2: "permission denied (EACCES)",
  10: "busy (EBUSY)",
  20: "file exists (EEXIST)",
  29: "input/output error (EIO)",
  31: "is a folder (EISDIR)",
  33: "too many open files (EMFILE)",
  44: "no such file or folder (ENOENT)",
  48: "out of memory (ENOMEM)",
  51: "no space left on the disk (ENOSPC)",
  54: "not a folder (ENOTDIR)",
  55: "folder not empty (ENOTEMPTY)",
  63: "operation not permitted (EPERM)",
  69: "read-only file system (EROFS)",
};

/**
 * What a thrown value that is not an Error says, as a message an operator can act on; `where`, the
 * data folder the file system error is about, when known.
 */
export function describeThrown(value: unknown, where = "the embedded database's files"): string {
  if (typeof value !== "object" || value === null) return String(value);
  const { message, errno } = value as { message?: unknown; errno?: unknown };
  if (typeof message === "string" && message !== "") return message;
  if (typeof errno === "number") {
    return `${where}: ${ERRNO[errno] ?? `system error ${errno}`}`;
  }
  try {
    return JSON.stringify(value);
  } catch {
    return String(value);
  }
}

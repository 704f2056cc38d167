import { randomBytes } from "node:crypto";
import { chmodSync, lstatSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";

/**
 * The operator credential a server writes into its data folder at every start, so that the `zona`
 * command on the same machine reaches its operator API without ZONA_ADMIN_TOKEN. Whoever can read
 * the data folder can read the database anyway; the credential gives nothing more.
 */
export interface LocalOperatorCredential {
  token: string;
  /** Removes the file if it still holds this credential (a later start may have replaced it); never throws. */
  remove(): void;
}

const FOLDER = "operator";
const FILE = "local-credential";

/** Where the credential of the server holding `dataDir` is: `<dataDir>/operator/local-credential`. */
export function localCredentialPath(dataDir: string): string {
  return join(dataDir, FOLDER, FILE);
}

/**
 * Writes a new random credential (replacing the one of an earlier start) into a folder only this
 * user can list, as a file only this user can read, in one rename: a reader sees the old file or
 * the new one, never a part.
 */
export function issueLocalOperatorCredential(dataDir: string): LocalOperatorCredential {
  const folder = join(dataDir, FOLDER);
  mkdirSync(folder, { recursive: true, mode: 0o700 });
  const stat = lstatSync(folder);
  if (!stat.isDirectory() || (process.getuid !== undefined && stat.uid !== process.getuid())) {
    throw new Error(`${folder} must be a folder of the user that runs Zona`);
  }
  // mkdir's mode counts only for a new folder; one made earlier by hand is closed too.
  chmodSync(folder, 0o700);
  const token = `zlo_${randomBytes(32).toString("base64url")}`;
  const path = join(folder, FILE);
  const temporary = join(folder, `.${FILE}.${process.pid}.${randomBytes(6).toString("hex")}`);
  try {
    writeFileSync(temporary, `${token}\n`, { mode: 0o600, flag: "wx" });
    renameSync(temporary, path);
  } catch (error) {
    rmSync(temporary, { force: true });
    throw error;
  }
  return {
    token,
    remove() {
      try {
        if (readLocalOperatorCredential(dataDir) === token) rmSync(path, { force: true });
      } catch {
        // A file left behind is harmless: no server accepts it, and the next start replaces it.
      }
    },
  };
}

/** The credential in the data folder, if there is one this user can read; EACCES and the like are thrown. */
export function readLocalOperatorCredential(dataDir: string): string | undefined {
  let text: string;
  try {
    text = readFileSync(localCredentialPath(dataDir), "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw error;
  }
  const token = text.trim();
  return token === "" ? undefined : token;
}

import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";

/** What a running Zona process writes into its data folder so that other processes know it is there. */
export interface DataDirOwner {
  pid: number;
  started_at: string;
  url?: string;
}

/** The embedded database lets one process at a time open it; raised when another one holds it. */
export class DataDirBusyError extends Error {
  override name = "DataDirBusyError";
  readonly owner: DataDirOwner;
  constructor(dataDir: string, owner: DataDirOwner) {
    super(
      `the embedded database in ${dataDir} is in use by another Zona process (pid ${owner.pid}` +
        `${owner.url ? `, serving ${owner.url}` : ""}); PGlite allows one process at a time`,
    );
    this.owner = owner;
  }
}

/** Exclusive hold on a data folder, released on close. */
export interface DataDirLock {
  /** Records where the holder listens, for the `zona` command. */
  update(info: Partial<DataDirOwner>): void;
  release(): void;
}

const LOCK_FILE = "zona.lock";

/** Reads who holds the data folder, if a live process does. */
export function readDataDirOwner(dataDir: string): DataDirOwner | undefined {
  let owner: DataDirOwner;
  try {
    owner = JSON.parse(readFileSync(join(dataDir, LOCK_FILE), "utf8")) as DataDirOwner;
  } catch {
    return undefined;
  }
  return isAlive(owner.pid) ? owner : undefined;
}

/** Takes the data folder for this process, or throws DataDirBusyError. A lock left by a dead process is taken over. */
export function lockDataDir(dataDir: string): DataDirLock {
  mkdirSync(dataDir, { recursive: true });
  const path = join(dataDir, LOCK_FILE);
  let owner: DataDirOwner = { pid: process.pid, started_at: new Date().toISOString() };
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      writeFileSync(path, JSON.stringify(owner), { flag: "wx" });
      return {
        update(info) {
          owner = { ...owner, ...info };
          writeFileSync(path, JSON.stringify(owner));
        },
        release() {
          if (readDataDirOwner(dataDir)?.pid === process.pid) rmSync(path, { force: true });
        },
      };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
      const holder = readDataDirOwner(dataDir);
      if (holder && holder.pid !== process.pid) throw new DataDirBusyError(dataDir, holder);
      rmSync(path, { force: true });
    }
  }
  throw new Error(`could not take ${path}`);
}

function isAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
  return !isZombie(pid);
}

// A process that was killed but not yet reaped still answers kill(pid, 0); in a container whose
// first process reaps nothing it stays so. On Linux its state in /proc says it is dead (Z or X).
function isZombie(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const state = stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3);
    return state === "Z" || state === "X";
  } catch {
    return false;
  }
}

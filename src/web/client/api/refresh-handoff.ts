import type { Session } from "./session.ts";

// localStorage reaches the other tabs' processes a moment later, so a tab that gets the refresh
// lock right after another tab renewed the pair may still read the old refresh token, and using it
// again would revoke every session of the account. IndexedDB goes through the browser process: a
// pair written by the tab that renewed it, before it let the lock go, is there for the next tab.
const DATABASE = "zona";
const STORE = "refresh";
const KEY = "last";

interface Handoff {
  /** The refresh token that was traded. */
  from: string;
  session: Session;
}

function open(): Promise<IDBDatabase | undefined> {
  return new Promise((resolve) => {
    if (typeof indexedDB === "undefined") return resolve(undefined);
    const request = indexedDB.open(DATABASE, 1);
    request.onupgradeneeded = () => request.result.createObjectStore(STORE);
    request.onsuccess = () => resolve(request.result);
    request.onerror = () => resolve(undefined);
  });
}

async function withStore<T>(
  mode: IDBTransactionMode,
  work: (store: IDBObjectStore) => IDBRequest<T>,
): Promise<T | undefined> {
  const database = await open();
  if (!database) return undefined;
  try {
    return await new Promise<T | undefined>((resolve) => {
      const transaction = database.transaction(STORE, mode);
      const request = work(transaction.objectStore(STORE));
      transaction.oncomplete = () => resolve(request.result);
      transaction.onerror = () => resolve(undefined);
      transaction.onabort = () => resolve(undefined);
    });
  } finally {
    database.close();
  }
}

/** Records the pair a refresh token was traded for; resolves once it is committed. */
export async function recordRefresh(from: string, session: Session): Promise<void> {
  await withStore("readwrite", (store) => store.put({ from, session } satisfies Handoff, KEY));
}

/** The pair another tab got for this refresh token, if it traded it. */
export async function refreshedFrom(from: string): Promise<Session | undefined> {
  const handoff = (await withStore("readonly", (store) => store.get(KEY))) as Handoff | undefined;
  return handoff?.from === from ? handoff.session : undefined;
}

/** Forgets the last pair (sign-out). */
export async function forgetRefresh(): Promise<void> {
  await withStore("readwrite", (store) => store.delete(KEY));
}

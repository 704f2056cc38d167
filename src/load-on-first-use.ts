/**
 * A module imported on its first use and kept for the life of the process. The packages only some
 * requests need (sharp and libvips for engine pictures, music-metadata and file-type for uploads,
 * mammoth for documents, nodemailer for SMTP) would otherwise sit in every server's memory from
 * the start, used or not (about 15 MB of RSS). A failed import is tried again on the
 * next call instead of failing every later one.
 */
export function loadOnFirstUse<T>(load: () => Promise<T>): () => Promise<T> {
  let loading: Promise<T> | undefined;
  return () => {
    loading ??= load().catch((error: unknown) => {
      loading = undefined;
      throw error;
    });
    return loading;
  };
}

// Where a profiled function comes from, for the profile summaries: its package, or its folder of Zona.

/** A script's URL from its package (`undici/lib/...`) or from Zona's `src/` on. */
export function shortUrl(url: string): string {
  const module = url.lastIndexOf("node_modules/");
  if (module !== -1) return url.slice(module + "node_modules/".length);
  const src = url.lastIndexOf("/src/");
  if (src !== -1) return url.slice(src + 1);
  return url;
}

/** The package a script belongs to (`undici`, `@electric-sql/pglite`), if any. */
export function packageOf(url: string): string | undefined {
  return /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url)?.[1];
}

/** The folder of Zona's `src/` a script lives in (`billing/shared`), if it is one of Zona's. */
export function zonaFolderOf(url: string): string | undefined {
  return /\/src\/(.+?)\/[^/]+$/.exec(url)?.[1];
}

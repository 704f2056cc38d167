/** The API a path belongs to; it decides the shape of errors. */
export type Surface = "key" | "app" | "admin" | "other";

/** Path prefixes of the three APIs. */
export const PREFIX = { key: "/v1", app: "/api/v1", admin: "/admin/v1" } as const;

/** Which API a request URL (path and query) belongs to. */
export function surfaceOf(url: string): Surface {
  const path = url.split("?", 1)[0] ?? "";
  if (isUnder(path, PREFIX.key)) return "key";
  if (isUnder(path, PREFIX.app)) return "app";
  if (isUnder(path, PREFIX.admin)) return "admin";
  return "other";
}

function isUnder(path: string, prefix: string): boolean {
  return path === prefix || path.startsWith(`${prefix}/`);
}

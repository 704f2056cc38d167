import type { RouteLimit } from "./route-limits.ts";

/** Per-address limits of requests made without key or user; trusted networks get 20 times more. */
export const ADDRESS_LIMITS = {
  imageFile: { counter: "image-file", limit: 120 }, // GET /v1/images/file/...
  login: { counter: "auth", limit: 10 }, // POST /auth/login
  register: { counter: "auth", limit: 10 }, // /auth/register
  forgotPassword: { counter: "auth", limit: 10 }, // /auth/forgot-password
  passwordResetConfirm: { counter: "auth", limit: 10 }, // /auth/password-reset/confirm
  refresh: { counter: "auth-refresh", limit: 60 }, // POST /auth/refresh
} as const satisfies Record<string, RouteLimit>;

/** Name of an address-limited endpoint of the table. */
export type AddressLimitName = keyof typeof ADDRESS_LIMITS;

/** How much wider address limits are for clients in `installation.trusted_networks`. */
export const TRUSTED_NETWORK_FACTOR = 20;

/** Route config of an address-limited endpoint: `app.post("/auth/login", { config: addressLimit("login") }, ...)`. */
export function addressLimit(name: AddressLimitName): { addressLimit: RouteLimit } {
  return { addressLimit: ADDRESS_LIMITS[name] };
}

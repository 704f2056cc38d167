/**
 * Who pays for a request: an API key of an account (key API), or an account alone (a signed-in
 * user of the app API, `keyId` null: no key, so no key's monthly limit either).
 */
export interface Payer {
  keyId: string | null;
  accountId: string;
  /** Zones the request may run in; null means the installation's zones. */
  zones: string[] | null;
  monthlyLimitMicros: number | null;
}

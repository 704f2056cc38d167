/** The tokens of the signed-in user, as the app API hands them out. */
export interface Session {
  accessToken: string;
  refreshToken: string;
  /** Milliseconds since the epoch after which the access token is refused. */
  accessExpiresAt: number;
  /** The account the tokens are of (absent in sessions kept by an older page). */
  userId?: string;
}

import { createContext } from "preact";
import { useContext } from "preact/hooks";
import type { LoginResponse, WebUser as User } from "../../../contract/app-api.ts";

/** The signed-in user and the ways to change who that is. */
export interface AuthState {
  /** Null when nobody is signed in. */
  user: User | null;
  /** Keeps the session of a login (sign-in, register, password reset) and loads the user. */
  signedIn(login: LoginResponse): Promise<void>;
  /** Reads the user again (after verification or a language change). */
  reload(): Promise<void>;
  /** Ends the session on the server and here. */
  signOut(): Promise<void>;
}

export const AuthContext = createContext<AuthState | null>(null);

/** The auth state of the page; only inside <App>. */
export function useAuth(): AuthState {
  const state = useContext(AuthContext);
  if (!state) throw new Error("useAuth outside the app");
  return state;
}

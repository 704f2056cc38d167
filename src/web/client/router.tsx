import type { AnchorHTMLAttributes, ComponentChildren } from "preact";
import { useEffect, useState } from "preact/hooks";

const listeners = new Set<() => void>();
// Counts every navigation, also one to the address already shown (a tap on "New chat" in "New chat").
let visits = 0;

function moved(): void {
  visits += 1;
  for (const listener of listeners) listener();
}

/** Goes to another screen of the web chat without loading the page again. */
export function navigate(to: string, options: { replace?: boolean } = {}): void {
  if (options.replace) history.replaceState(null, "", to);
  else history.pushState(null, "", to);
  moved();
}

window.addEventListener("popstate", moved);

/**
 * The address of the page now; the component renders again when it changes. `visit` changes with
 * every navigation, even to the same address.
 */
export function useLocation(): { path: string; query: URLSearchParams; visit: number } {
  const [, setTick] = useState(0);
  useEffect(() => {
    const listener = () => setTick((tick) => tick + 1);
    listeners.add(listener);
    return () => void listeners.delete(listener);
  }, []);
  return { path: location.pathname, query: new URLSearchParams(location.search), visit: visits };
}

/** The parameters of `path` under `pattern` (`/c/:id`), or undefined when it does not match. */
export function matchPath(pattern: string, path: string): Record<string, string> | undefined {
  const want = pattern.split("/");
  const have = path.split("/");
  if (want.length !== have.length) return undefined;
  const params: Record<string, string> = {};
  for (const [i, part] of want.entries()) {
    const value = have[i] ?? "";
    if (part.startsWith(":")) {
      if (value === "") return undefined;
      params[part.slice(1)] = decodeURIComponent(value);
    } else if (part !== value) return undefined;
  }
  return params;
}

type LinkProps = AnchorHTMLAttributes<HTMLAnchorElement> & { href: string; children?: ComponentChildren };

/** A link that changes the screen without a page load (a modified click opens a new tab as usual). */
export function Link(props: LinkProps) {
  const { href, onClick, ...rest } = props;
  return (
    <a
      {...rest}
      href={href}
      onClick={(event) => {
        if (typeof onClick === "function") onClick(event);
        if (event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey)
          return;
        event.preventDefault();
        navigate(href);
      }}
    />
  );
}

/** The browser tab's title: which page, and for an experiment or a trial its state, so
 * tabs watching several runs tell apart (every tab read "Determined"). */
import { useEffect } from "react";

export function pageTitle(...parts: (string | null | undefined | false)[]): string {
  return [...parts.filter((p): p is string => !!p), "Determined"].join(" · ");
}

export function usePageTitle(...parts: (string | null | undefined | false)[]): void {
  const title = pageTitle(...parts);
  useEffect(() => {
    document.title = title;
  }, [title]);
}

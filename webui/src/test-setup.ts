import { format } from "node:util";
import { afterEach } from "vitest";

// jsdom lacks matchMedia, which uPlot reads when it loads.
if (!window.matchMedia) {
  window.matchMedia = (query: string) =>
    ({ matches: false, media: query, onchange: null, addListener() {}, removeListener() {}, addEventListener() {}, removeEventListener() {}, dispatchEvent: () => false }) as MediaQueryList;
}

// React's "not wrapped in act(...)" warning means a test ended (or asserted) before a state
// update it caused, such as a fetch answered after the last expect: such a test checks less
// than it seems to. It fails the test that logged it, naming the component.
const actWarnings: string[] = [];
const consoleError = console.error.bind(console);
console.error = (...args: unknown[]) => {
  const text = format(...args);
  if (text.includes("not wrapped in act(")) actWarnings.push(text.split("\n")[0]);
  consoleError(...args);
};
afterEach(() => {
  const found = actWarnings.splice(0);
  if (found.length) throw new Error(`React state updated outside act(): ${found.join("; ")} (await what the update shows)`);
});

import { copyFileSync, mkdirSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import react from "@vitejs/plugin-react";
import type { Plugin } from "vite";
import { defineConfig } from "vitest/config";

const here = dirname(fileURLToPath(import.meta.url));
// The build lands in the Python package, so the master serves it and a wheel carries it.
const outDir = resolve(here, "../src/determined/master/webui/static");

/** Copies Swagger UI's script and style into the build: /docs works offline. */
function swaggerAssets(): Plugin {
  return {
    name: "swagger-ui-assets",
    apply: "build",
    closeBundle() {
      const from = resolve(here, "node_modules/swagger-ui-dist");
      mkdirSync(resolve(outDir, "swagger"), { recursive: true });
      for (const name of ["swagger-ui-bundle.js", "swagger-ui.css"]) {
        copyFileSync(resolve(from, name), resolve(outDir, "swagger", name));
      }
    },
  };
}

export default defineConfig({
  plugins: [react(), swaggerAssets()],
  build: { outDir, emptyOutDir: true, chunkSizeWarningLimit: 1000 },
  server: { proxy: { "/api": "http://127.0.0.1:8080" } },
  test: { environment: "jsdom", globals: true, css: false, setupFiles: ["src/test-setup.ts"] },
});

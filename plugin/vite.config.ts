// Builds the plugin's two pages into dist/ with relative asset URLs, so the same build works when the
// service serves it under /plugin/ and when the vSphere Client proxies it; plugin.json goes alongside.
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { defineConfig, type Plugin } from 'vitest/config';

function manifest(): Plugin {
  return {
    name: 'basil-plugin-manifest',
    generateBundle() {
      const text = readFileSync(resolve(import.meta.dirname, 'plugin.json'), 'utf-8');
      JSON.parse(text); // a broken manifest fails the build, not the vSphere Client
      this.emitFile({ type: 'asset', fileName: 'plugin.json', source: text });
    },
  };
}

export default defineConfig({
  base: './',
  plugins: [manifest()],
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    chunkSizeWarningLimit: 2000,
    rollupOptions: {
      input: {
        index: resolve(import.meta.dirname, 'index.html'),
        client: resolve(import.meta.dirname, 'client.html'),
      },
    },
  },
  test: {
    environment: 'jsdom',
    include: ['test/**/*.test.{ts,tsx}'],
  },
});

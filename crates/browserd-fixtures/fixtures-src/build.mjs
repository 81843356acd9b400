// Builds the fixture apps with esbuild into ../fixtures/apps/ (production React, Vue, Lit and Svelte, minified),
// printing each bundle as it is written; `.svelte` files go through Svelte's own compiler (client output) first. The bundles are checked in, so tests need no build step; run `npm ci && npm run build`
// here after changing a source.
import { build } from 'esbuild';
import { readFileSync, statSync } from 'node:fs';
import { compile } from 'svelte/compiler';

// Compiles `.svelte` components for the browser (production: no dev checks), as a bundler plugin would.
const svelte = {
  name: 'svelte',
  setup(b) {
    b.onLoad({ filter: /\.svelte$/ }, ({ path }) => {
      const { js } = compile(readFileSync(path, 'utf8'), { filename: path, generate: 'client', dev: false });
      return { contents: js.code, loader: 'js', resolveDir: 'src' };
    });
  },
};

const apps = ['tracker.jsx', 'dashboard.jsx', 'mail.js', 'admin.js', 'shop.jsx', 'components.js', 'board.js', 'crm.js', 'account.jsx', 'chat.jsx', 'checkout.jsx', 'console.jsx', 'people.js', 'ledger.jsx', 'bootstrap.js'];
for (const entry of apps) {
  const out = `../fixtures/apps/${entry.replace(/\.jsx?$/, '')}.js`;
  process.stdout.write(`building ${out} ... `);
  await build({
    entryPoints: [`src/${entry}`],
    outfile: out,
    bundle: true,
    minify: true,
    format: 'iife',
    target: 'es2020',
    jsx: 'automatic',
    legalComments: 'none',
    banner: { js: `// Built by crates/browserd-fixtures/fixtures-src (npm run build) from src/${entry}; do not edit.` },
    define: {
      'process.env.NODE_ENV': '"production"',
      __VUE_OPTIONS_API__: 'true',
      __VUE_PROD_DEVTOOLS__: 'false',
      __VUE_PROD_HYDRATION_MISMATCH_DETAILS__: 'false',
    },
    conditions: ['svelte', 'browser', 'production'],
    plugins: [svelte],
    // A widget's stylesheet is imported as text and put in a <style> by the app (the site serves one bundle per app).
    loader: { '.css': 'text' },
    logLevel: 'warning',
  });
  console.log(`${statSync(out).size} bytes`);
}

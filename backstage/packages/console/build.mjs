// Builds the console into relay/console/dist: one hashed script and one
// hashed style sheet under assets/, and index.html naming them. The relay's
// binary embeds that folder (go:embed), so `make console` runs before
// `go build`. The portal and terminal packages are this workspace's own,
// compiled from their sources with the console's.
import { build } from 'esbuild';
import { mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';

const out = new URL('../../../relay/console/dist/', import.meta.url).pathname;
for (const f of readdirSync(out)) {
  if (f !== '.gitkeep') rmSync(join(out, f), { recursive: true, force: true });
}
mkdirSync(join(out, 'assets'), { recursive: true });
const result = await build({
  entryPoints: ['src/main.ts'],
  bundle: true,
  minify: true,
  format: 'esm',
  target: ['es2022'],
  outdir: join(out, 'assets'),
  entryNames: '[name]-[hash]',
  assetNames: '[name]-[hash]',
  metafile: true,
  legalComments: 'linked',
  logLevel: 'warning',
});
const outputs = Object.keys(result.metafile.outputs).map((p) => basename(p));
const script = outputs.find((f) => f.endsWith('.js'));
const style = outputs.find((f) => f.endsWith('.css'));
writeFileSync(join(out, 'index.html'), `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>breakglass</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="/console/assets/${style}">
<script type="module" src="/console/assets/${script}"></script>
</head>
<body>
<a class="skip" href="#main">Skip to content</a>
<header id="top"></header>
<main id="main" tabindex="-1"></main>
</body>
</html>
`);
console.log(`console built: ${outputs.join(', ')}`);

import { readdirSync } from 'node:fs';
import Module, { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

/**
 * zod's main entry re-exports every one of its ~60 message locales (`z.locales.de`, …), so the
 * first `import 'zod'` loads and keeps them all: about 0.7 MB of source text (held as UTF-16,
 * the files are not Latin-1) and 1.5 MB of the hub's idle RSS. The hub only ever uses English,
 * which zod loads by itself (directly, not through this index).
 *
 * leanZodLocales() puts a stand-in for the locales index into the require cache before zod
 * loads: the same names (one per locale file), each loading its locale on first access, so
 * `z.config(z.locales.de())` still works. Call it before anything imports zod; when zod's
 * layout is not the expected one it does nothing (zod then loads its own index as usual).
 * Importing this module does it (the CLI and the library entry import it first).
 */
export function leanZodLocales(): boolean {
  let index: string;
  try {
    index = require.resolve('zod/v4/locales');
  } catch {
    return false;
  }
  if (require.cache[index] || !index.endsWith(`${join('locales', 'index.cjs')}`)) return false;
  const dir = dirname(index);
  let files: string[];
  try {
    files = readdirSync(dir).filter((f) => f.endsWith('.cjs') && f !== 'index.cjs');
  } catch {
    return false;
  }
  if (!files.includes('en.cjs')) return false;
  const load = createRequire(index);
  const locales: Record<string, unknown> = {};
  Object.defineProperty(locales, '__esModule', { value: true });
  for (const file of files) {
    // zh-CN.cjs is exported as zhCN, as in zod's own index.
    const name = file.slice(0, -'.cjs'.length).replace(/-/g, '');
    Object.defineProperty(locales, name, {
      enumerable: true,
      // What zod's own index does (__importDefault): a locale file exports its function itself.
      get: () => {
        const m = load(join(dir, file)) as { __esModule?: boolean; default?: unknown };
        return m && m.__esModule ? m.default : m;
      },
    });
  }
  const stand = new Module(index, module);
  stand.filename = index;
  stand.loaded = true;
  stand.exports = Object.freeze(locales);
  require.cache[index] = stand;
  return true;
}

leanZodLocales();

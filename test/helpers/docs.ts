/**
 * The documentation the tests read: README.md (the front door) and every page under docs/.
 * Tests that check examples, generated tables or links go through here, so a section moved
 * from one page to another stays checked.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

export const ROOT = path.join(__dirname, '..', '..');

/** Every documentation file, relative to the repository root: README.md first, then docs/**\/*.md in path order. */
export function docFiles(): string[] {
  const pages: string[] = [];
  const walk = (dir: string) => {
    if (!existsSync(path.join(ROOT, dir))) return;
    for (const e of readdirSync(path.join(ROOT, dir), { withFileTypes: true })) {
      const rel = `${dir}/${e.name}`;
      if (e.isDirectory()) walk(rel);
      else if (e.name.endsWith('.md')) pages.push(rel);
    }
  };
  walk('docs');
  return ['README.md', ...pages.sort()];
}

/** One documentation file's text (`rel` relative to the repository root). */
export function readDoc(rel: string): string {
  return readFileSync(path.join(ROOT, rel), 'utf8');
}

export interface Block {
  /** The file it is in, relative to the repository root. */
  file: string;
  lang: string;
  code: string;
  /** The line of its opening fence (1-based). */
  line: number;
}

/** The fenced code blocks of a markdown text, with their language tag and first line number. */
export function codeBlocks(markdown: string, file = ''): Block[] {
  const blocks: Block[] = [];
  const lines = markdown.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const open = /^```(\w*)\s*$/.exec(lines[i]);
    if (!open) continue;
    const start = i;
    const body: string[] = [];
    for (i++; i < lines.length && !/^```\s*$/.test(lines[i]); i++) body.push(lines[i]);
    blocks.push({ file, lang: open[1], code: body.join('\n'), line: start + 1 });
  }
  return blocks;
}

/** Every fenced block of every documentation file, in docFiles() order. */
export function allBlocks(): Block[] {
  return docFiles().flatMap((f) => codeBlocks(readDoc(f), f));
}

/** The one documentation file whose text contains `marker` (a test's way to find the page a block lives on). */
export function docWith(marker: string): { file: string; text: string } {
  const found = docFiles().filter((f) => readDoc(f).includes(marker));
  if (found.length !== 1)
    throw new Error(`expected one documentation file containing ${JSON.stringify(marker)}, found ${found.length}: ${found.join(', ')}`);
  return { file: found[0], text: readDoc(found[0]) };
}

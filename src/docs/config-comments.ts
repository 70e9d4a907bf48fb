import { join } from 'node:path';
import ts from 'typescript';

/**
 * The description of every configuration key, read from the JSDoc comments above the zod
 * properties (src/config/schema.ts, src/drivers/*\/config.ts, src/<front end>/config.ts …).
 *
 * Why the comments and not `.describe()`: they are already the one place a key is explained,
 * the editor shows them on `HubConfig` (z.input/z.output keep each property's declaration),
 * and the schema files belong to many areas; moving every text into `.describe()` would turn
 * each comment into a string the type no longer carries. The TypeScript checker follows the
 * real composition (src/hub-config.ts spreads the core's, the drivers' and the front ends'
 * parts), so a section added later is read without this module knowing it.
 *
 * Only the docs generator and its test load this module: it needs the `typescript` package
 * (a devDependency) and the source files, which an installed hub does not have.
 */

/** The repository root, from src/docs or dist/docs alike. */
const ROOT = join(__dirname, '..', '..');

/** Key path → description (whitespace collapsed); array items are `key[]` (`snapcast.servers[].address`). */
export type ConfigComments = Map<string, string>;

/** Reads the descriptions of `HubConfigInput` (src/hub-config.ts). Takes a few seconds: it type-checks the hub's sources. */
export function readConfigComments(root = ROOT): ConfigComments {
  const file = join(root, 'src', 'hub-config.ts');
  const parsed = ts.getParsedCommandLineOfConfigFile(join(root, 'tsconfig.json'), {}, { ...ts.sys, onUnRecoverableConfigFileDiagnostic: () => {} });
  // The project's options, without the test-only jest types (the checker reads src/ only).
  const options: ts.CompilerOptions = { ...(parsed?.options ?? {}), noEmit: true, types: ['node'] };
  const program = ts.createProgram([file], options);
  const checker = program.getTypeChecker();
  const source = program.getSourceFile(file);
  const moduleSymbol = source && checker.getSymbolAtLocation(source);
  const alias = moduleSymbol && checker.getExportsOfModule(moduleSymbol).find((s) => s.name === 'HubConfigInput');
  if (!alias) throw new Error(`${file} exports no HubConfigInput type`);
  const comments: ConfigComments = new Map();
  walk(checker, checker.getDeclaredTypeOfSymbol(alias), '', comments, 0);
  return comments;
}

/** Deeper than any section nests: a guard against recursive types. */
const MAX_DEPTH = 8;

function walk(checker: ts.TypeChecker, type: ts.Type, prefix: string, out: ConfigComments, depth: number): void {
  if (depth > MAX_DEPTH) return;
  for (const part of parts(checker, type)) {
    if (checker.isArrayType(part)) {
      const [item] = checker.getTypeArguments(part as ts.TypeReference);
      if (item) walk(checker, item, `${prefix}[]`, out, depth + 1);
      continue;
    }
    for (const property of checker.getPropertiesOfType(part)) {
      const key = prefix ? `${prefix}.${property.name}` : property.name;
      const text = ts.displayPartsToString(property.getDocumentationComment(checker)).replace(/\s+/g, ' ').trim();
      if (text && !out.has(key)) out.set(key, text);
      walk(checker, checker.getTypeOfSymbol(property), key, out, depth + 1);
    }
  }
}

/** The object and array types a value may be: itself or its union members (strings, numbers … have no keys). */
function parts(checker: ts.TypeChecker, type: ts.Type): ts.Type[] {
  const t = checker.getNonNullableType(type);
  if (t.isUnion()) return t.types.flatMap((m) => parts(checker, m));
  return t.flags & ts.TypeFlags.Object ? [t] : [];
}

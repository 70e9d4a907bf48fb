import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

/**
 * The package version, read from package.json so it has one home. Found by walking up from
 * this file, since the compiled file sits at different depths (dist/, a bench build, ts-jest).
 */
function packageVersion(): string {
  for (let dir = __dirname; ; dir = dirname(dir)) {
    const file = join(dir, 'package.json');
    if (existsSync(file)) {
      const pkg = JSON.parse(readFileSync(file, 'utf8')) as { name?: string; version?: string };
      if (pkg.name === 'homebridge-speakerhub' && pkg.version) return pkg.version;
    }
    if (dirname(dir) === dir) return '0.0.0';
  }
}

export const VERSION: string = packageVersion();

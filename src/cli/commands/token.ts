import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Command } from 'commander';
import { generateToken } from '../../server/auth';
import { EXIT_FAILED } from '../program';
import { dataDirOf } from '../remote/connection';

/**
 * token: prints the API token from the hub's data folder (for scripts: T=$(speakerhub token));
 * --rotate replaces it. A running hub notices the new file and switches at once (and on
 * SIGHUP); clients holding the old token get 401 from then on.
 */
export function registerTokenCommand(program: Command): void {
  program
    .command('token')
    .description("Print the hub's API token from its data folder; --rotate makes a new one (the running hub switches to it).")
    .option('--rotate', 'replace the token with a new random one')
    .option('-d, --data <dir>', "the hub's data folder (default: SPEAKERHUB_DATA_DIR, else ~/.speakerhub)")
    .action((flags: { rotate?: boolean; data?: string }) => {
      const dir = dataDirOf(flags);
      const file = join(dir, 'api-token');
      if (flags.rotate) {
        const token = generateToken();
        mkdirSync(dir, { recursive: true });
        // Atomic: the hub never reads a half-written token.
        const tmp = `${file}.${process.pid}.tmp`;
        writeFileSync(tmp, `${token}\n`, { mode: 0o600 });
        renameSync(tmp, file);
        process.stdout.write(`${token}\n`);
        process.stderr.write(
          `speakerhub: new API token saved in ${file}; a running hub with that data folder uses it now (clients need the new one).\n`,
        );
        return;
      }
      try {
        process.stdout.write(`${readFileSync(file, 'utf8').trim()}\n`);
      } catch (e) {
        process.stderr.write(
          `speakerhub: no API token in ${file} (${(e as NodeJS.ErrnoException).code}); start the hub once (speakerhub hub), or pass --data <its data folder>.\n`,
        );
        process.exitCode = EXIT_FAILED;
      }
    });
}

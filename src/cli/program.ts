import { Command, CommanderError } from 'commander';
import { VERSION } from '../version';
import { endQuietlyOnClosedStdout } from './closed-pipe';

/** Adds one or more top-level commands (hub, speakers, cloud, account …) to the program. */
export type CommandRegistrar = (program: Command) => void;

/**
 * Exit codes: 0 success; 1 a command that ran and failed (the hub answered an error, it is
 * unreachable); 2 a usage or start-up problem the user fixes (bad flag, bad configuration,
 * port in use).
 */
export const EXIT_USAGE = 2;
export const EXIT_FAILED = 1;

export function buildProgram(registrars: readonly CommandRegistrar[]): Command {
  const program = new Command('speakerhub')
    .version(VERSION)
    .description('SpeakerHub: control networked speakers and play audio on them.')
    .showHelpAfterError('(run with --help for the options)')
    // Subcommands created after this inherit it: argument errors throw instead of exiting 1.
    .exitOverride();
  for (const register of registrars) register(program);
  return program;
}

/** Parses and runs; argument-parser errors exit 2 like configuration errors (commander's default is 1). */
export async function runCli(program: Command, argv: string[]): Promise<void> {
  endQuietlyOnClosedStdout();
  try {
    await program.parseAsync(argv);
  } catch (e) {
    if (e instanceof CommanderError) {
      const ok = e.code === 'commander.helpDisplayed' || e.code === 'commander.version' || e.code === 'commander.help';
      process.exit(ok ? 0 : EXIT_USAGE);
    }
    process.stderr.write(`speakerhub: ${(e as Error)?.message ?? String(e)}\n`);
    process.exit(EXIT_FAILED);
  }
}

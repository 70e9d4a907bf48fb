import type { Command } from 'commander';
import { registerInfoCommands } from './info';
import { registerPlaybackCommands } from './playback';
import { registerTokenCommand } from './token';
import { registerTransportCommands } from './transport';
import { registerVolumeCommand } from './volume';

/** The commands for people and scripts that talk to a running hub. */
export function remoteCommands(program: Command): void {
  registerInfoCommands(program);
  registerPlaybackCommands(program);
  registerTransportCommands(program);
  registerVolumeCommand(program);
  registerTokenCommand(program);
}

#!/usr/bin/env node
// First: sizes V8's young generation for a long-running server before anything is allocated.
import './cli/heap';
// Second: zod's message locales load on first use, not all ~60 of them with zod.
import './util/zod-locales';
import { hubCommand, type HubOptionRegistrar } from './cli/hub-command';
import { remoteCommands } from './cli/commands';
import { driverHubOptions } from './cli/driver-options';
import { buildProgram, runCli, type CommandRegistrar } from './cli/program';
import { frontEndHubOptions } from './cli/front-end-options';
import { registerCloudCommands } from './cloud/cli';

/**
 * The `speakerhub` command. This file only lists what plugs in; each part lives in its own
 * module. Drivers and front ends are listed in their registries (src/drivers/registry.ts,
 * src/front-ends.ts), whose flags the two registrars below add.
 */

/** Flags of `speakerhub hub` beyond the core's: each adds options and maps them to config (and only to config). */
const HUB_OPTIONS: HubOptionRegistrar[] = [driverHubOptions, frontEndHubOptions];

/** Top-level commands: the hub itself, then the commands that talk to a running hub (e.g. cloud, account). */
const COMMANDS: CommandRegistrar[] = [hubCommand(HUB_OPTIONS), remoteCommands, (program) => registerCloudCommands(program)];

export function buildCli() {
  return buildProgram(COMMANDS);
}

if (require.main === module) {
  void runCli(buildCli(), process.argv);
}

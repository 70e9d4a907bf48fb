import type { Server } from 'node:http';
import type { ExtensionContext, HubExtension } from '../extensions/extension';
import { RestServer, type RestServerOptions } from './rest-server';

/** The local REST server as a hub extension: the first one started, the last one stopped. */
export class RestExtension implements HubExtension {
  readonly name = 'rest';
  private server?: RestServer;

  constructor(private readonly options: RestServerOptions) {}

  async start(ctx: ExtensionContext): Promise<void> {
    this.server = new RestServer(ctx, this.options);
    await this.server.start();
  }

  async stop(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    await server?.stop();
  }

  /** Switches the API token of the running server. */
  setToken(token: string): void {
    this.server?.setToken(token);
  }

  /** Base URL while it listens. */
  get url(): string | undefined {
    return this.server?.url;
  }

  get httpServer(): Server | undefined {
    return this.server?.server;
  }
}

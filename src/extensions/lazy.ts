import type { ExtensionContext, HubExtension } from './extension';

/**
 * A front end whose code loads only when the hub starts it: the CLI lists every front end it
 * knows, and one that is configured off (or absent) never costs the process its modules.
 */
export function lazyExtension(name: string, load: () => Promise<HubExtension>): HubExtension & { readonly loaded?: HubExtension } {
  let inner: HubExtension | undefined;
  return {
    name,
    get loaded() {
      return inner;
    },
    async start(ctx: ExtensionContext) {
      inner = await load();
      await inner.start(ctx);
    },
    async stop() {
      await inner?.stop();
    },
  };
}

import { networkInterfaces, type NetworkInterfaceInfo } from 'node:os';

/** The host's interfaces as `os.networkInterfaces()` gives them (injectable for tests). */
export type InterfaceSource = () => NodeJS.Dict<NetworkInterfaceInfo[]>;

export interface NetworkWatchOptions {
  /** Poll period; the OS has no portable "address changed" event, and a few seconds is prompt enough. */
  intervalMs: number;
  /** Only this interface counts (the configured `network.interface`); absent: every interface. */
  interfaceName?: string;
  source?: InterfaceSource;
  /** Every address the hub had is gone. */
  onLost(): void;
  /** Addresses are back after a loss; gives the addresses now held. */
  onRestored(addresses: string[]): void;
}

/** Non-internal IPv4 addresses: what LAN clients and speakers reach the hub on. */
export function lanAddresses(source: InterfaceSource, interfaceName?: string): string[] {
  const all = source();
  const names = interfaceName ? [interfaceName] : Object.keys(all);
  const out: string[] = [];
  for (const name of names) for (const a of all[name] ?? []) if (a.family === 'IPv4' && !a.internal) out.push(a.address);
  return out.sort();
}

/**
 * Notices the host losing its network (its LAN addresses all gone: cable out, Wi-Fi lost,
 * DHCP lease ended) and getting it back. A hub that starts without addresses has lost
 * nothing: their first arrival is not reported.
 */
export class NetworkWatch {
  private timer?: NodeJS.Timeout;
  private had = false;
  private lost = false;
  private readonly source: InterfaceSource;

  constructor(private readonly options: NetworkWatchOptions) {
    this.source = options.source ?? networkInterfaces;
  }

  get isLost(): boolean {
    return this.lost;
  }

  start(): void {
    if (this.timer) return;
    this.check();
    this.timer = setInterval(() => this.check(), this.options.intervalMs);
    // Watching never keeps the process alive on its own.
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  /** One look at the interfaces; a failing source counts as no change. */
  check(): void {
    let addresses: string[];
    try {
      addresses = lanAddresses(this.source, this.options.interfaceName);
    } catch {
      return;
    }
    if (addresses.length > 0) {
      this.had = true;
      if (this.lost) {
        this.lost = false;
        this.options.onRestored(addresses);
      }
    } else if (this.had && !this.lost) {
      this.lost = true;
      this.options.onLost();
    }
  }
}

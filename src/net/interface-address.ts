import { networkInterfaces } from 'node:os';

/** The first IPv4 address of a network interface, or a clear error naming what exists. */
export function interfaceAddress(name: string): string {
  const all = networkInterfaces();
  const addr = all[name]?.find((a) => a.family === 'IPv4');
  if (!addr) {
    const known = Object.keys(all).join(', ') || 'none';
    throw new Error(`network interface "${name}" has no IPv4 address (interfaces here: ${known})`);
  }
  return addr.address;
}

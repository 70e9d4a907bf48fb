/**
 * HAP's naming rule (hap-nodejs 2 warns, and the Home app may refuse the accessory, otherwise):
 * start and end with a letter or digit; in between letters, digits, spaces and ' ’ & ! . _ : ;
 * ( ) / , -. DeviceNames are changed only that much: other characters become spaces, and a
 * trailing "(…)" loses its brackets ("Kitchen (2)" → "Kitchen 2") rather than its closing one.
 */
export function homekitName(name: string, fallback: string): string {
  const cleaned = name
    .normalize('NFC')
    .replace(/[^\p{L}\p{N}\p{Zs}\u2019'&!._:;()/,-]/gu, ' ')
    .replace(/\(([^()]*)\)\s*$/u, ' $1')
    .replace(/\p{Zs}+/gu, ' ')
    .replace(/^[^\p{L}\p{N}]+|[^\p{L}\p{N}]+$/gu, '')
    .slice(0, 64)
    .replace(/[^\p{L}\p{N}]+$/u, '');
  return cleaned || fallback;
}

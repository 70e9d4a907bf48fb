/**
 * HAP accepts names of letters, digits, spaces and . , ' - (and #), starting and ending with
 * a letter or digit; iOS rejects or renames others. DeviceNames are changed only that much.
 */
export function homekitName(name: string, fallback: string): string {
  const cleaned = name
    .normalize('NFC')
    .replace(/[^\p{L}\p{N} .,'#-]/gu, ' ')
    .replace(/\s+/g, ' ')
    .replace(/^[^\p{L}\p{N}]+|[^\p{L}\p{N}]+$/gu, '')
    .slice(0, 64)
    .trim();
  return cleaned || fallback;
}

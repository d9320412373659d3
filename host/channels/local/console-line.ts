import type { OutboxItem } from '../../store/outbox-store.ts';

/** "2.0 KB": a file's size as a console line shows it (1 KB = 1,024 bytes). */
export function formatBytes(n: number): string {
  if (n < 1024) return `${n} bytes`;
  const units = ['KB', 'MB', 'GB'];
  let value = n / 1024;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return `${value.toFixed(1)} ${units[unit]}`;
}

/**
 * What the console prints for a delivered piece: its text, and for a file (a piece of its own, usually
 * without text) a line naming it, since a terminal cannot show the file itself.
 */
export function consoleLine(item: Pick<OutboxItem, 'text' | 'attachment'>): string {
  const a = item.attachment;
  if (!a) return item.text;
  const file = `[file: ${a.fileName}${a.bytes === undefined ? '' : `, ${formatBytes(a.bytes)}`}]`;
  return item.text ? `${item.text}\n${file}` : file;
}

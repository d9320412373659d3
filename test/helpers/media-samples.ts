import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/**
 * Real media made in the test: speech from espeak-ng encoded as Ogg/Opus by ffmpeg (what Telegram and
 * WhatsApp voice notes are), a PNG, and a PDF whose text pdftotext reads. CI installs espeak-ng and ffmpeg
 * (.ci/run).
 */

/** A voice note saying `words`, as Ogg/Opus bytes. */
export function voiceNote(words: string): Buffer {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'carapace-voice-'));
  try {
    const wav = path.join(dir, 'v.wav');
    const ogg = path.join(dir, 'v.ogg');
    execFileSync('espeak-ng', ['-w', wav, words]);
    execFileSync('ffmpeg', ['-loglevel', 'error', '-y', '-i', wav, '-c:a', 'libopus', '-b:a', '24k', ogg]);
    return fs.readFileSync(ogg);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** A 1×1 PNG. */
export const PNG_1X1 = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==',
  'base64',
);

/** A one-page PDF showing `line` in Helvetica: objects, a correct xref table and trailer. */
export function pdfWithText(line: string): Buffer {
  const escaped = line.replace(/[\\()]/g, (c) => `\\${c}`);
  const content = `BT /F1 18 Tf 72 720 Td (${escaped}) Tj ET`;
  const objects = [
    '<< /Type /Catalog /Pages 2 0 R >>',
    '<< /Type /Pages /Kids [3 0 R] /Count 1 >>',
    '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>',
    `<< /Length ${Buffer.byteLength(content)} >>\nstream\n${content}\nendstream`,
    '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>',
  ];
  let out = '%PDF-1.4\n';
  const offsets: number[] = [];
  objects.forEach((body, i) => {
    offsets.push(Buffer.byteLength(out));
    out += `${i + 1} 0 obj\n${body}\nendobj\n`;
  });
  const xref = Buffer.byteLength(out);
  out += `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n`;
  for (const o of offsets) out += `${String(o).padStart(10, '0')} 00000 n \n`;
  out += `trailer\n<< /Size ${objects.length + 1} /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`;
  return Buffer.from(out, 'latin1');
}

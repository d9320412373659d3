import fs from 'node:fs/promises';
import * as z from 'zod';
import type { Workspace } from '../workspace/confine.ts';
import { ToolError, defineTool, type AgentTool } from './tool.ts';

/** Bytes read from one file at most; larger files are read in line windows of their start. */
const MAX_READ_BYTES = 2 * 1024 * 1024;
const DEFAULT_LINES = 2000;

const readArgs = z
  .object({
    path: z
      .string()
      .min(1)
      .max(4096)
      .describe('File path, relative to the group folder or absolute inside the workspace.'),
    offset: z.number().int().min(1).optional().describe('First line to return (1-based).'),
    limit: z
      .number()
      .int()
      .min(1)
      .max(10_000)
      .optional()
      .describe(`How many lines to return (default ${DEFAULT_LINES}).`),
  })
  .strict();

export function createReadFileTool(workspace: Workspace): AgentTool {
  return defineTool({
    name: 'read_file',
    description: 'Read a text file from the workspace.',
    schema: readArgs,
    async run(args) {
      const file = await workspace.resolve(args.path);
      const stat = await fs.stat(file);
      if (stat.isDirectory()) throw new ToolError(`${args.path} is a directory; use list_files`);
      if (!stat.isFile()) throw new ToolError(`${args.path} is not a regular file`);
      const handle = await fs.open(file, 'r');
      let buffer: Buffer;
      try {
        const length = Math.min(stat.size, MAX_READ_BYTES);
        buffer = Buffer.alloc(length);
        const { bytesRead } = await handle.read(buffer, 0, length, 0);
        buffer = buffer.subarray(0, bytesRead);
      } finally {
        await handle.close();
      }
      if (buffer.subarray(0, 8192).includes(0))
        return `${args.path} is a binary file (${stat.size} bytes); not shown.`;
      const lines = buffer.toString('utf8').split('\n');
      const start = (args.offset ?? 1) - 1;
      const count = args.limit ?? DEFAULT_LINES;
      const window = lines.slice(start, start + count);
      const notes: string[] = [];
      if (start > 0 || start + count < lines.length) {
        notes.push(
          `[lines ${start + 1}-${Math.min(start + count, lines.length)} of ${lines.length}${stat.size > MAX_READ_BYTES ? '+' : ''}]`,
        );
      }
      if (stat.size > MAX_READ_BYTES)
        notes.push(`[only the first ${MAX_READ_BYTES} bytes of ${stat.size} were read]`);
      return [...notes, window.join('\n')].join('\n');
    },
  });
}

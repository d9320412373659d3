import fs from 'node:fs/promises';
import path from 'node:path';
import * as z from 'zod';
import type { Workspace } from '../workspace/confine.ts';
import { defineTool, type AgentTool } from './tool.ts';

export const MAX_WRITE_CHARS = 1024 * 1024;

const writeArgs = z
  .object({
    path: z
      .string()
      .min(1)
      .max(4096)
      .describe('File path, relative to the group folder or absolute inside the workspace.'),
    content: z.string().max(MAX_WRITE_CHARS).describe('The complete new content of the file.'),
  })
  .strict();

export function createWriteFileTool(workspace: Workspace): AgentTool {
  return defineTool({
    name: 'write_file',
    description: 'Create or overwrite a file in the workspace (parent folders are created).',
    schema: writeArgs,
    async run(args) {
      const file = await workspace.resolve(args.path, { allowMissing: true });
      await fs.mkdir(path.dirname(file), { recursive: true });
      await fs.writeFile(file, args.content, 'utf8');
      return `Wrote ${Buffer.byteLength(args.content, 'utf8')} bytes to ${workspace.display(file)}.`;
    },
  });
}

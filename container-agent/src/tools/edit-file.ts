import fs from 'node:fs/promises';
import * as z from 'zod';
import type { Workspace } from '../workspace/confine.ts';
import { ToolError, defineTool, type AgentTool } from './tool.ts';
import { MAX_WRITE_CHARS } from './write-file.ts';

const editArgs = z
  .object({
    path: z
      .string()
      .min(1)
      .max(4096)
      .describe('File path, relative to the group folder or absolute inside the workspace.'),
    old_string: z
      .string()
      .min(1)
      .max(MAX_WRITE_CHARS)
      .describe('Exact text to replace, including whitespace.'),
    new_string: z.string().max(MAX_WRITE_CHARS).describe('Replacement text.'),
    replace_all: z
      .boolean()
      .optional()
      .describe('Replace every occurrence (default: old_string must occur exactly once).'),
  })
  .strict();

export function createEditFileTool(workspace: Workspace): AgentTool {
  return defineTool({
    name: 'edit_file',
    description: 'Replace an exact piece of text in a workspace file.',
    schema: editArgs,
    async run(args) {
      const file = await workspace.resolve(args.path);
      const text = await fs.readFile(file, 'utf8');
      const count = countOccurrences(text, args.old_string);
      if (count === 0)
        throw new ToolError(
          `old_string was not found in ${args.path}; read the file and copy the text exactly`,
        );
      if (count > 1 && !args.replace_all) {
        throw new ToolError(
          `old_string occurs ${count} times in ${args.path}; add surrounding text to make it unique, or set replace_all`,
        );
      }
      const updated = args.replace_all
        ? text.split(args.old_string).join(args.new_string)
        : text.replace(args.old_string, () => args.new_string);
      if (updated.length > MAX_WRITE_CHARS)
        throw new ToolError(`the edited file would exceed ${MAX_WRITE_CHARS} characters`);
      await fs.writeFile(file, updated, 'utf8');
      return `Replaced ${args.replace_all ? count : 1} occurrence(s) in ${workspace.display(file)}.`;
    },
  });
}

function countOccurrences(text: string, needle: string): number {
  let count = 0;
  for (let at = text.indexOf(needle); at !== -1; at = text.indexOf(needle, at + needle.length)) count++;
  return count;
}

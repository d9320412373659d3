/**
 * A plain copy of a tree-sitter tree. Walking the wasm-backed tree node by node crosses into wasm and
 * allocates for every property; one cursor pass into plain objects is faster and lets the rules be
 * tested without the parser's object model.
 */
import type { Tree } from 'web-tree-sitter';

export interface SyntaxNode {
  type: string;
  /** False for anonymous tokens such as `;`, `$(` or `do`. */
  named: boolean;
  /** The field name the parent gave this child (`name`, `argument`, `redirect`, …), if any. */
  field: string | null;
  /** UTF-16 offsets into the source, as web-tree-sitter reports them for string input. */
  start: number;
  end: number;
  children: SyntaxNode[];
}

export interface ConvertedTree {
  root: SyntaxNode;
  /** The parser recovered from an error somewhere (ERROR or MISSING node). */
  hasError: boolean;
  /** Nesting went deeper than the limit; the deeper part was left out. */
  tooDeep: boolean;
}

export function convertTree(tree: Tree, maxDepth: number): ConvertedTree {
  const cursor = tree.walk();
  let hasError = tree.rootNode.hasError;
  let tooDeep = false;
  try {
    const root: SyntaxNode = {
      type: cursor.nodeType,
      named: cursor.nodeIsNamed,
      field: null,
      start: cursor.startIndex,
      end: cursor.endIndex,
      children: [],
    };
    // Iterative so that pathological nesting cannot overflow the JS stack.
    const stack: SyntaxNode[] = [root];
    if (!cursor.gotoFirstChild()) return { root, hasError, tooDeep };
    for (;;) {
      const parent = stack[stack.length - 1];
      if (parent === undefined) break;
      const node: SyntaxNode = {
        type: cursor.nodeType,
        named: cursor.nodeIsNamed,
        field: cursor.currentFieldName,
        start: cursor.startIndex,
        end: cursor.endIndex,
        children: [],
      };
      if (cursor.nodeIsMissing || node.type === 'ERROR') hasError = true;
      parent.children.push(node);
      if (stack.length < maxDepth && cursor.gotoFirstChild()) {
        stack.push(node);
        continue;
      }
      if (stack.length >= maxDepth && cursor.gotoFirstChild()) {
        tooDeep = true;
        cursor.gotoParent();
      }
      while (!cursor.gotoNextSibling()) {
        if (!cursor.gotoParent()) return { root, hasError, tooDeep };
        stack.pop();
        if (stack.length === 0) return { root, hasError, tooDeep };
      }
    }
    return { root, hasError, tooDeep };
  } finally {
    cursor.delete();
  }
}

/** Why PostgreSQL cannot store a string: a NUL character, or a UTF-16 surrogate without its pair. */
export type UnstorableCharacter = "nul" | "surrogate";

/** A string of a request that cannot be stored, and where it is. */
export interface UnstorableText {
  /** The field: a dotted path into JSON (`messages.0.content`), or a form or query field's name. */
  field: string;
  character: UnstorableCharacter;
}

// Ordinary text never matches, so most strings cost one regex test; the precise look is for hits.
// biome-ignore lint/suspicious/noControlCharactersInRegex: NUL is what is looked for.
const SUSPECT = /[\u0000\uD800-\uDFFF]/;

/** What in `text` cannot be stored, if anything; a surrogate pair (an emoji, say) is fine. */
export function unstorableCharacter(text: string): UnstorableCharacter | undefined {
  if (!SUSPECT.test(text)) return undefined;
  if (text.includes("\u0000")) return "nul";
  return text.isWellFormed() ? undefined : "surrogate";
}

/** A field name as it can be shown and stored: each unstorable character becomes U+FFFD. */
export function shownName(name: string): string {
  return name.replaceAll("\u0000", "\uFFFD").toWellFormed();
}

/** A container still to look into, and the way to it. */
interface Frame {
  value: object;
  key: string | number | undefined;
  parent: Frame | undefined;
}

/**
 * The first string of a parsed body or query (any value or object key, at any depth) that cannot
 * be stored. The walk keeps its own stack: a body nested thousands of levels deep is valid JSON.
 */
export function findUnstorable(root: unknown): UnstorableText | undefined {
  if (typeof root === "string") {
    const character = unstorableCharacter(root);
    return character ? { field: "body", character } : undefined;
  }
  if (typeof root !== "object" || root === null) return undefined;
  const stack: Frame[] = [{ value: root, key: undefined, parent: undefined }];
  for (let frame = stack.pop(); frame !== undefined; frame = stack.pop()) {
    const container = frame.value;
    const nested: Frame[] = [];
    let found: UnstorableText | undefined;
    if (Array.isArray(container)) {
      for (let i = 0; i < container.length && !found; i++) found = look(frame, i, container[i], nested);
    } else {
      for (const key of Object.keys(container)) {
        const character = unstorableCharacter(key);
        found = character
          ? { field: pathOf(frame, key), character }
          : look(frame, key, (container as Record<string, unknown>)[key], nested);
        if (found) break;
      }
    }
    if (found) return found;
    // Reversed, so that nested fields are looked at in the order they were written.
    for (let i = nested.length - 1; i >= 0; i--) stack.push(nested[i] as Frame);
  }
  return undefined;
}

/** Checks a string at once; keeps a container for later. */
function look(
  frame: Frame,
  key: string | number,
  value: unknown,
  nested: Frame[],
): UnstorableText | undefined {
  if (typeof value === "string") {
    const character = unstorableCharacter(value);
    return character ? { field: pathOf(frame, key), character } : undefined;
  }
  if (typeof value === "object" && value !== null) nested.push({ value, key, parent: frame });
  return undefined;
}

function pathOf(frame: Frame, key: string | number): string {
  const steps = [String(key)];
  for (let step: Frame | undefined = frame; step?.key !== undefined; step = step.parent) {
    steps.push(String(step.key));
  }
  return shownName(steps.reverse().join("."));
}

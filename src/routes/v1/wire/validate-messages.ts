import type { ChatMessage, ContentPart } from "../../../engines/types.ts";
import { type FieldErrors, given, isObject, say } from "./validate-common.ts";

/** Roles a chat message may have. */
export const ROLES = ["system", "user", "assistant", "tool"] as const;
const DETAILS = ["auto", "low", "high"] as const;

/** An `image_url` part of the validated messages and the field path that names it in errors. */
export interface ImageRef {
  param: string;
  part: Extract<ContentPart, { type: "image_url" }>;
}

/** Validated messages and their images, which are checked once the model is known. */
export interface ReadMessages {
  messages: ChatMessage[];
  images: ImageRef[];
}

/**
 * Reads `messages` into the internal shape, adding a 422 error per field at fault (paths in dot
 * notation: `messages.1.content.0.image_url.url`). Fields of a message other than role, content,
 * name, tool_calls and tool_call_id are dropped: clients send back the assistant message of an
 * answer as it came (`refusal`, `annotations`...).
 */
export function readMessages(errors: FieldErrors, value: unknown): ReadMessages | undefined {
  if (value === undefined || value === null) {
    errors.add("messages", say.required("messages"));
    return undefined;
  }
  if (!Array.isArray(value)) {
    errors.add("messages", say.array("messages"));
    return undefined;
  }
  if (value.length === 0) {
    errors.add("messages", "The messages field must have at least 1 item.");
    return undefined;
  }
  const messages: ChatMessage[] = [];
  const images: ImageRef[] = [];
  value.forEach((item: unknown, i) => {
    const message = readMessage(errors, `messages.${i}`, item, images);
    if (message) messages.push(message);
  });
  return { messages, images };
}

function readMessage(
  errors: FieldErrors,
  path: string,
  item: unknown,
  images: ImageRef[],
): ChatMessage | undefined {
  if (!isObject(item)) {
    errors.add(path, say.object(path));
    return undefined;
  }
  const role = given(item, "role");
  if (role === undefined) {
    errors.add(`${path}.role`, say.required(`${path}.role`));
    return undefined;
  }
  if (typeof role !== "string" || !(ROLES as readonly string[]).includes(role)) {
    errors.add(`${path}.role`, say.oneOf(`${path}.role`, ROLES));
    return undefined;
  }
  const message: ChatMessage = { role: role as ChatMessage["role"], content: null };
  let ok = true;

  const toolCalls =
    role === "assistant" ? readToolCalls(errors, `${path}.tool_calls`, given(item, "tool_calls")) : undefined;
  if (toolCalls === null) ok = false;
  else if (toolCalls && toolCalls.length > 0) message.tool_calls = toolCalls;

  const content = given(item, "content");
  if (content === undefined) {
    // Only an assistant message that calls tools may come without content.
    if (!message.tool_calls) {
      errors.add(`${path}.content`, say.required(`${path}.content`));
      ok = false;
    }
  } else {
    const read = readContent(errors, `${path}.content`, content, role === "user", images);
    if (read === undefined) ok = false;
    else message.content = read;
  }

  const name = given(item, "name");
  if (name !== undefined) {
    if (typeof name !== "string") {
      errors.add(`${path}.name`, say.string(`${path}.name`));
      ok = false;
    } else message.name = name;
  }
  if (role === "tool") {
    const id = given(item, "tool_call_id");
    if (typeof id !== "string" || id === "") {
      errors.add(
        `${path}.tool_call_id`,
        id === undefined ? say.required(`${path}.tool_call_id`) : say.string(`${path}.tool_call_id`),
      );
      ok = false;
    } else message.tool_call_id = id;
  }
  return ok ? message : undefined;
}

function readContent(
  errors: FieldErrors,
  path: string,
  value: unknown,
  imagesAllowed: boolean,
  images: ImageRef[],
): string | ContentPart[] | undefined {
  if (typeof value === "string") return value;
  if (!Array.isArray(value)) {
    errors.add(path, `The ${path} field must be a string or an array of content parts.`);
    return undefined;
  }
  if (value.length === 0) {
    errors.add(path, `The ${path} field must have at least 1 item.`);
    return undefined;
  }
  const parts: ContentPart[] = [];
  let ok = true;
  value.forEach((item: unknown, j) => {
    const part = readPart(errors, `${path}.${j}`, item, imagesAllowed, images);
    if (part) parts.push(part);
    else ok = false;
  });
  return ok ? parts : undefined;
}

function readPart(
  errors: FieldErrors,
  path: string,
  item: unknown,
  imagesAllowed: boolean,
  images: ImageRef[],
): ContentPart | undefined {
  if (!isObject(item)) {
    errors.add(path, say.object(path));
    return undefined;
  }
  const type = item.type;
  if (type === "text") {
    if (typeof item.text !== "string") {
      errors.add(`${path}.text`, say.string(`${path}.text`));
      return undefined;
    }
    return { type: "text", text: item.text };
  }
  if (type === "image_url" && imagesAllowed) {
    const image = item.image_url;
    // OpenAI takes {url, detail}; a bare string is a common shorthand of other clients.
    const url = typeof image === "string" ? image : isObject(image) ? image.url : undefined;
    if (typeof url !== "string" || url === "") {
      errors.add(`${path}.image_url.url`, say.required(`${path}.image_url.url`));
      return undefined;
    }
    const detail = isObject(image) ? given(image, "detail") : undefined;
    if (detail !== undefined && !(DETAILS as readonly unknown[]).includes(detail)) {
      errors.add(`${path}.image_url.detail`, say.oneOf(`${path}.image_url.detail`, DETAILS));
      return undefined;
    }
    const part: ImageRef["part"] = {
      type: "image_url",
      image_url: detail === undefined ? { url } : { url, detail: detail as (typeof DETAILS)[number] },
    };
    images.push({ param: `${path}.image_url.url`, part });
    return part;
  }
  const allowed = imagesAllowed ? ["text", "image_url"] : ["text"];
  errors.add(`${path}.type`, say.oneOf(`${path}.type`, allowed));
  return undefined;
}

/** Tool calls of an assistant message: undefined when absent, null when at fault. */
function readToolCalls(errors: FieldErrors, path: string, value: unknown): ChatMessage["tool_calls"] | null {
  if (value === undefined) return undefined;
  if (!Array.isArray(value)) {
    errors.add(path, say.array(path));
    return null;
  }
  const calls: NonNullable<ChatMessage["tool_calls"]> = [];
  for (const [k, call] of value.entries()) {
    const fn = isObject(call) ? call.function : undefined;
    if (
      !isObject(call) ||
      typeof call.id !== "string" ||
      (call.type !== undefined && call.type !== "function") ||
      !isObject(fn) ||
      typeof fn.name !== "string" ||
      typeof fn.arguments !== "string"
    ) {
      errors.add(
        `${path}.${k}`,
        `The ${path}.${k} field must be {id, type: "function", function: {name, arguments}} with strings.`,
      );
      return null;
    }
    calls.push({ id: call.id, type: "function", function: { name: fn.name, arguments: fn.arguments } });
  }
  return calls;
}

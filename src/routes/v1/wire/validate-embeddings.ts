import { invalidRequest } from "../../../errors/catalogue.ts";
import { fieldsOf, given } from "./validate-common.ts";

/** Embeddings take up to 32 texts per request. */
export const MAX_EMBEDDING_INPUTS = 32;

/** A valid `POST /v1/embeddings` body. */
export interface ValidEmbeddings {
  texts: string[];
  encoding: "float" | "base64";
}

/**
 * Validates a `POST /v1/embeddings` body. `input` is a string or a list of 1 to 32 strings; token-id
 * lists, empty texts, more than 32 texts and a missing input are 400s naming `input`;
 * `encoding_format` is `float` (default) or `base64`. Every other field (`model`, `dimensions`,
 * `user`...) is ignored: the model is always the catalogue's embedding model.
 */
export function validateEmbeddings(body: unknown): ValidEmbeddings {
  const fields = fieldsOf(body);
  const input = given(fields, "input");
  if (input === undefined) {
    throw invalidRequest("Missing required parameter: 'input'.", {
      param: "input",
      code: "missing_required_parameter",
    });
  }
  const texts = Array.isArray(input) ? input : [input];
  if (texts.length === 0) throw refuse("'input' must not be an empty list.");
  if (texts.some((item) => typeof item === "number" || Array.isArray(item))) {
    throw refuse("'input' must be text: token-id lists are not supported.");
  }
  if (texts.some((item) => typeof item !== "string")) {
    throw refuse("'input' must be a string or a list of strings.");
  }
  if (texts.length > MAX_EMBEDDING_INPUTS) {
    throw refuse(`'input' may hold at most ${MAX_EMBEDDING_INPUTS} texts; send the rest in another request.`);
  }
  const empty = texts.indexOf("");
  if (empty >= 0)
    throw refuse(
      Array.isArray(input)
        ? `'input' must not hold empty texts (item ${empty} is empty).`
        : "'input' must not be empty.",
    );

  const encoding = given(fields, "encoding_format") ?? "float";
  if (encoding !== "float" && encoding !== "base64") {
    throw invalidRequest("'encoding_format' must be 'float' or 'base64'.", {
      param: "encoding_format",
      code: "invalid_value",
    });
  }
  return { texts: texts as string[], encoding };
}

function refuse(message: string) {
  return invalidRequest(message, { param: "input", code: "invalid_value" });
}

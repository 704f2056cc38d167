/** The length of every passage embedding (bge-m3): migration 0008's index casts them to vector(1024). */
export const EMBEDDING_DIMENSIONS = 1024;

// PostgreSQL's binary array format (array_send): ndim, has-nulls flag, element type, then per
// dimension its length and lower bound, then each element as a 4-byte length and its bytes.
const FLOAT4_OID = 700;
const HEADER_BYTES = 12;
const DIMENSION_BYTES = 8;
const ELEMENT_BYTES = 8;

/** An embedding that is not EMBEDDING_DIMENSIONS finite numbers (another model's size, a NaN). */
export class UnfitEmbedding extends RangeError {
  override name = "UnfitEmbedding";
}

/**
 * An embedding as the float4 numbers the database keeps (real[]), checked: exactly
 * EMBEDDING_DIMENSIONS finite numbers, else an UnfitEmbedding (pgvector would refuse it too).
 */
export function toEmbedding(values: ArrayLike<number>, what: string): Float32Array {
  if (values.length !== EMBEDDING_DIMENSIONS) {
    throw new UnfitEmbedding(`${what} has ${values.length} numbers, not ${EMBEDDING_DIMENSIONS}`);
  }
  const embedding = Float32Array.from(values);
  for (const value of embedding) {
    if (!Number.isFinite(value)) throw new UnfitEmbedding(`${what} holds a number that is not finite`);
  }
  return embedding;
}

/** The Euclidean length, summed in doubles. */
export function lengthOf(vector: Float32Array): number {
  let sum = 0;
  for (const value of vector) sum += value * value;
  return Math.sqrt(sum);
}

/**
 * Cosine similarity of a query (with its length) and an embedding as array_send gives it, without
 * copying the embedding. Undefined when the embedding is not a real[] of the query's length or has
 * no length (pgvector leaves zero vectors out of a cosine index, so both paths skip them).
 */
export function cosineOfSent(query: Float32Array, queryLength: number, sent: Uint8Array): number | undefined {
  const view = new DataView(sent.buffer, sent.byteOffset, sent.byteLength);
  if (sent.byteLength < HEADER_BYTES + DIMENSION_BYTES) return undefined;
  if (view.getInt32(0) !== 1 || view.getInt32(4) !== 0 || view.getUint32(8) !== FLOAT4_OID) return undefined;
  if (view.getInt32(HEADER_BYTES) !== query.length) return undefined;
  const start = HEADER_BYTES + DIMENSION_BYTES;
  if (sent.byteLength !== start + query.length * ELEMENT_BYTES) return undefined;
  let dot = 0;
  let squares = 0;
  for (let i = 0; i < query.length; i++) {
    const value = view.getFloat32(start + i * ELEMENT_BYTES + 4);
    dot += (query[i] ?? 0) * value;
    squares += value * value;
  }
  if (squares === 0 || queryLength === 0) return undefined;
  // Clamped like pgvector's cosine distance, which rounding could otherwise push past ±1.
  return Math.min(1, Math.max(-1, dot / (queryLength * Math.sqrt(squares))));
}

/** pgvector's text form of a vector (`[0.1,0.2,...]`); float4 numbers print back exactly. */
export function vectorLiteral(vector: Float32Array): string {
  return `[${vector.join(",")}]`;
}

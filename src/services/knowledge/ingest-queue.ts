/** The name of the queued reading of an uploaded document (its data: `{ id }`, the document's). */
export const INGEST_JOB = "kb-ingest";

/** What a document's reading carries through the queue. */
export interface IngestJobData {
  id: string;
}

/** The queue id of a document's reading: one entry per document (BullMQ refuses ids with ':'). */
export function ingestQueueId(documentId: string): string {
  return `ingest-${documentId}`;
}

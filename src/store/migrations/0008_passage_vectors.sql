-- Custom SQL migration file, put your code below! --
-- pgvector where the database has it (PGlite with its extension package, PostgreSQL with pgvector
-- installed): the extension and an HNSW index over the embeddings cast to vectors, which
-- src/store/repositories/kb-passages.ts then uses. Where the extension is missing, or this role may
-- not create it, nothing changes and the passages are compared in the process instead; the
-- migration passes either way (one schema, one set of migrations for every database).
DO $$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'vector') THEN
    RETURN;
  END IF;
  BEGIN
    CREATE EXTENSION IF NOT EXISTS vector;
  EXCEPTION WHEN OTHERS THEN
    RAISE NOTICE 'pgvector not created (%): passages are compared in the process', SQLERRM;
    RETURN;
  END;
  -- Apart, so that a pgvector without HNSW (before 0.5) still serves exact searches.
  BEGIN
    CREATE INDEX IF NOT EXISTS kb_passages_embedding_idx ON kb_passages
      USING hnsw ((embedding::vector(1024)) vector_cosine_ops);
  EXCEPTION WHEN OTHERS THEN
    RAISE NOTICE 'no HNSW index on passages (%): searches scan them', SQLERRM;
  END;
END
$$;

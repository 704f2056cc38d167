/**
 * The time a test gets when it opens the embedded database from a data folder on disk, several
 * times (each open starts PGlite, the first one also migrates the folder): 5-15 s each on a busy
 * 2-core machine, past the suite's 30 s default for a few opens in a row.
 */
export const EMBEDDED_FOLDER_TEST_MS = 120_000;

'use strict';
/**
 * Commits numbered rows to the embedded cloud database as fast as it can and prints each
 * number once its commit has returned, until killed. The durability test SIGKILLs it at a
 * random moment and checks every printed number survived. Small checkpoints, so kills
 * also land during snapshot writes. Argument: the database file.
 */
const { SqlJsDatabase } = require('../../dist/cloud/storage/sqljs-database');
const { migrate } = require('../../dist/cloud/storage/migrations');

(async () => {
  const db = await SqlJsDatabase.open(process.argv[2], { checkpointBytes: 4096 });
  await migrate(db);
  const start = Number((await db.all('SELECT COUNT(*) AS n FROM link_tokens'))[0].n);
  for (let i = start + 1; ; i++) {
    await db.transaction(async (q) => {
      await q.run('INSERT INTO link_tokens (token_hash, user_id, created_at) VALUES ($1, $2, $3)', [`t${i}`, 'u', i]);
      await q.run('INSERT INTO web_sessions (token_hash, user_id, expires_at) VALUES ($1, $2, $3)', [`s${i}`, 'u', i]);
    });
    process.stdout.write(`${i}\n`);
  }
})();

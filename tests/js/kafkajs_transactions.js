// kafkajs transactions against a cluster's Kafka listener; run by
// tests/process/test_transactions_clients.py with kafkajs on NODE_PATH.
//
//   node kafkajs_transactions.js BOOTSTRAP INPUT OUTPUT GROUP TRANSACTIONAL_ID
//
// INPUT and OUTPUT exist (one partition each) and INPUT holds 6 records. A transactional
// producer commits c0..c4 to OUTPUT, aborts "aborted" after it is in the log, then a consumer
// of GROUP copies INPUT to OUTPUT in upper case, one transaction per batch, committing the
// batch's offsets with sendOffsets. Prints one JSON line: what a read_committed consumer
// (kafkajs's default) and a readUncommitted one read from OUTPUT, and GROUP's offsets.
'use strict'
const { Kafka, logLevel } = require('kafkajs')

const [bootstrap, input, output, group, transactionalId] = process.argv.slice(2)
const kafka = new Kafka({ clientId: 'kafkajs-txn', brokers: bootstrap.split(','), logLevel: logLevel.ERROR })

async function readAll (groupId, readUncommitted, expect) {
  const consumer = kafka.consumer({ groupId, readUncommitted, maxWaitTimeInMs: 500 })
  await consumer.connect()
  await consumer.subscribe({ topics: [output], fromBeginning: true })
  const values = []
  await new Promise(resolve => {
    let quiet = setTimeout(resolve, 20000)
    consumer.run({
      eachMessage: async ({ message }) => {
        values.push(message.value.toString())
        if (values.length >= expect) { clearTimeout(quiet); quiet = setTimeout(resolve, 2000) } // nothing more may come
      }
    })
  })
  await consumer.disconnect()
  return values
}

async function main () {
  const producer = kafka.producer({ transactionalId, maxInFlightRequests: 1, idempotent: true })
  await producer.connect()
  let txn = await producer.transaction()
  await txn.send({ topic: output, messages: [0, 1, 2, 3, 4].map(i => ({ value: `c${i}` })) })
  await txn.commit()
  txn = await producer.transaction()
  await txn.send({ topic: output, messages: [{ value: 'aborted' }] })
  await txn.abort()

  const consumer = kafka.consumer({ groupId: group, maxWaitTimeInMs: 500 })
  await consumer.connect()
  await consumer.subscribe({ topics: [input], fromBeginning: true })
  let copied = 0
  let transactions = 0
  await new Promise((resolve, reject) => {
    consumer.run({
      autoCommit: false,
      eachBatch: async ({ batch }) => {
        const t = await producer.transaction()
        try {
          await t.send({ topic: output, messages: batch.messages.map(m => ({ value: m.value.toString().toUpperCase() })) })
          await t.sendOffsets({
            consumerGroupId: group,
            topics: [{ topic: batch.topic, partitions: [{ partition: batch.partition, offset: String(BigInt(batch.lastOffset()) + 1n) }] }]
          })
          await t.commit()
        } catch (e) {
          await t.abort()
          reject(e)
          return
        }
        transactions += 1
        copied += batch.messages.length
        if (copied >= 6) resolve()
      }
    }).catch(reject)
  })
  await consumer.disconnect()
  await producer.disconnect()

  const admin = kafka.admin()
  await admin.connect()
  const offsets = await admin.fetchOffsets({ groupId: group, topics: [input] })
  await admin.disconnect()
  const readCommitted = await readAll(`${group}-committed`, false, 11)
  const readUncommitted = await readAll(`${group}-uncommitted`, true, 12)
  console.log(JSON.stringify({
    event: 'result',
    transactions,
    copied,
    offsets: offsets[0].partitions.map(p => [p.partition, Number(p.offset)]),
    read_committed: readCommitted,
    read_uncommitted: readUncommitted
  }))
}

main().then(() => process.exit(0), e => { console.error(e); process.exit(1) })

// A kafkajs producer and consumer through a kill of the partition's leader (Node's own
// test runner: `npm install && npm test`, with the minikafka command on PATH or named by
// MINIKAFKA). The cluster is started by `minikafka fault serve`, which prints one JSON
// line (its control URL and both bootstrap strings) and stops the cluster on SIGTERM;
// the leader is killed through the control server's HTTP endpoint.
'use strict'
const { test, before, after } = require('node:test')
const assert = require('node:assert/strict')
const { spawn } = require('node:child_process')
const { createInterface } = require('node:readline')
const { mkdtempSync } = require('node:fs')
const { tmpdir } = require('node:os')
const { join } = require('node:path')
const { Kafka, logLevel } = require('kafkajs')

let server
let control
let kafka

before(async () => {
  // MINIKAFKA_CLUSTER_DIR: where the cluster lives (a runner that may kill this test stops it there)
  const dir = process.env.MINIKAFKA_CLUSTER_DIR || join(mkdtempSync(join(tmpdir(), 'minikafka-node-')), 'cluster')
  server = spawn(process.env.MINIKAFKA || 'minikafka', ['fault', 'serve', '--dir', dir, '--json'],
    { stdio: ['ignore', 'pipe', 'inherit'] })
  const [line] = await new Promise((resolve, reject) => {
    server.once('error', reject)
    server.once('exit', code => reject(new Error(`minikafka fault serve exited with ${code}`)))
    createInterface({ input: server.stdout }).once('line', l => resolve([l]))
  })
  const started = JSON.parse(line)
  control = started.control
  // retries: a killed broker's leaderships move once its ZooKeeper session expires (seconds),
  // so give the retries a minute, as Java's delivery.timeout.ms gives them two
  kafka = new Kafka({
    clientId: 'node-example',
    brokers: started.kafka_bootstrap.split(','),
    logLevel: logLevel.NOTHING,
    retry: { initialRetryTime: 300, maxRetryTime: 5000, retries: 20 }
  })
})

after(async () => {
  if (server && server.exitCode === null) {
    const exited = new Promise(resolve => server.once('exit', resolve))
    server.kill('SIGTERM') // the server stops the cluster it started
    await exited
  }
})

async function post (path, body) {
  const resp = await fetch(control + path, {
    method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body)
  })
  const answer = await resp.json()
  assert.equal(resp.status, 200, JSON.stringify(answer))
  return answer
}

test('every acknowledged record is read once through a leader kill', async () => {
  const admin = kafka.admin()
  await admin.connect()
  await admin.createTopics({ topics: [{ topic: 'orders', numPartitions: 1, replicationFactor: 3 }], waitForLeaders: true })
  await admin.disconnect()

  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 })
  await producer.connect()
  const acknowledged = new Map() // offset -> value
  const send = async (from, to) => {
    for (let i = from; i < to; i++) {
      const [meta] = await producer.send({ topic: 'orders', acks: -1, messages: [{ value: `order-${i}` }] })
      acknowledged.set(meta.baseOffset, `order-${i}`)
    }
  }
  await send(0, 100)
  const killed = await post('/v1/faults/kill', { target: 'leader:orders:0' })
  await send(100, 200) // kafkajs retries until the new leader answers
  await producer.disconnect()
  const now = await post('/v1/wait/leader', { topic: 'orders', partition: 0 })
  assert.notEqual(now.leader, killed.broker)
  await post('/v1/faults/heal', {})

  const consumer = kafka.consumer({ groupId: 'node-example-readers', maxWaitTimeInMs: 500 })
  await consumer.connect()
  await consumer.subscribe({ topics: ['orders'], fromBeginning: true })
  const read = new Map()
  await new Promise((resolve, reject) => {
    const deadline = setTimeout(() => reject(new Error(`only ${read.size} records in 60 s`)), 60000)
    consumer.run({
      eachMessage: async ({ message }) => {
        assert.ok(!read.has(message.offset), `offset ${message.offset} read twice`)
        read.set(message.offset, message.value.toString())
        if (read.size >= 200) { clearTimeout(deadline); resolve() }
      }
    }).catch(reject)
  })
  await consumer.disconnect()
  assert.deepEqual(read, acknowledged, 'every acknowledged record at its offset, nothing else')
})

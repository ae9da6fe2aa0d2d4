/**
 * Entity tags and conditional requests on the REST layer: RFC 9110 §8.8.3 (ETag), §13.1.1
 * (If-Match), §13.1.2 (If-None-Match), §13.2.2 (their order), §15.4.5 (304), RFC 9111 §5.2.2.7 (private), and
 * AIP-154 (an `etag` in the request body; a stale one is ABORTED).
 */
import { beforeAll, describe, expect, it } from 'vitest';
import request from 'supertest';
import { eq } from 'drizzle-orm';
import { describeEachDatabase } from '../support/runtime.js';
import { issueTestToken } from '../support/tokens.js';
import { buildOrder, buildProduct, type Product } from '../support/factories.js';
import { orders, products } from '../../src/db/schema.js';
import { representationTag, versionOf } from '../../src/rest/etag.js';

const STRONG_TAG = /^"[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]{22})?"$/;
const ERROR_INFO = 'type.googleapis.com/google.rpc.ErrorInfo';

describeEachDatabase('REST caching and preconditions', (context) => {
  let owner: string;
  let userId: number;
  let writeOnly: string;
  let stranger: string;
  let product: Product;

  beforeAll(async () => {
    const { runtime } = context();
    ({ authorization: owner, userId } = await issueTestToken(runtime));
    ({ authorization: writeOnly } = await issueTestToken(runtime, { userId, scope: 'orders:write' }));
    ({ authorization: stranger } = await issueTestToken(runtime));
    product = await buildProduct(runtime, { name: 'Lantern', priceCents: 1500, reviews: 1 });
  });

  const app = () => request(context().app);
  const get = (path: string, authorization = owner, headers: Record<string, string> = {}) => app().get(path).set('Authorization', authorization).set(headers);
  const newOrder = () => buildOrder(context().runtime, { userId, memo: 'first', items: [{ product, quantity: 1 }] });
  const memoOf = async (id: number) => (await context().runtime.db.select({ memo: orders.memo }).from(orders).where(eq(orders.id, id)))[0]!.memo;
  const storedOrder = async (id: number) => (await context().runtime.db.select().from(orders).where(eq(orders.id, id)))[0]!;
  const patch = (id: number, body: Record<string, unknown>, headers: Record<string, string> = {}) =>
    app().patch(`/orders/${id}?update_mask=memo`).set('Authorization', owner).set(headers).send(body);

  describe('ETag and If-None-Match on every GET (RFC 9110 §8.8.3, §13.1.2)', () => {
    const paths = async () => {
      const order = await newOrder();
      return ['/products', `/products/${product.id}`, '/orders', `/orders/${order.id}`, `/orders/${order.id}?fields=memo`];
    };

    it('tags each representation with a strong ETag over its bytes, private and revalidated', async () => {
      for (const path of await paths()) {
        const res = await get(path);
        expect(res.status, path).toBe(200);
        expect(res.headers.etag, path).toMatch(STRONG_TAG);
        // The tag is the digest of exactly the bytes sent (after the order's version, for one order).
        const version = /^"([^".]+)\./.exec(res.headers.etag!)?.[1];
        expect(res.headers.etag, path).toBe(representationTag(res.text, version));
        expect(res.headers['cache-control'], path).toBe('private, no-cache');
        expect(res.headers.vary, path).toMatch(/\bAuthorization\b/);
      }
    });

    it('sends a read as JSON with its exact length; HEAD sends the same headers and no body', async () => {
      for (const path of await paths()) {
        const res = await get(path);
        expect(res.headers['content-type'], path).toBe('application/json; charset=utf-8');
        expect(res.headers['content-length'], path).toBe(String(Buffer.byteLength(res.text)));
        const head = await app().head(path).set('Authorization', owner);
        expect(head.status, path).toBe(200);
        expect(head.text ?? '', path).toBe('');
        for (const name of ['content-type', 'content-length', 'etag', 'cache-control', 'vary']) expect(head.headers[name], `${path} ${name}`).toBe(res.headers[name]);
      }
    });

    it('answers a matching If-None-Match with 304, no body and the same ETag; HEAD too', async () => {
      for (const path of await paths()) {
        const first = await get(path);
        for (const ifNoneMatch of [first.headers.etag!, `W/${first.headers.etag}`, `"other", ${first.headers.etag}`, '*']) {
          const again = await get(path, owner, { 'If-None-Match': ifNoneMatch });
          expect(again.status, `${path} ${ifNoneMatch}`).toBe(304);
          expect(again.text ?? '', path).toBe('');
          expect(again.headers.etag, path).toBe(first.headers.etag);
          expect(again.headers['cache-control'], path).toBe('private, no-cache');
        }
        const head = await app().head(path).set('Authorization', owner).set('If-None-Match', first.headers.etag!);
        expect(head.status, path).toBe(304);
        const stale = await get(path, owner, { 'If-None-Match': '"not-this-one"' });
        expect(stale.status, path).toBe(200);
        expect(stale.headers.etag).toBe(first.headers.etag);
        // The origin evaluates the condition whatever the cache directives (fetch() adds no-cache to conditional requests).
        expect((await get(path, owner, { 'If-None-Match': first.headers.etag!, 'Cache-Control': 'no-cache' })).status).toBe(304);
      }
    });

    it('changes the ETag whenever the representation changes, embedded resources included', async () => {
      const order = await newOrder();
      const path = `/orders/${order.id}?fields=memo,items.product.name`;
      const before = await get(path);
      const other = await get(`/orders/${order.id}?fields=memo`);
      expect(other.headers.etag).not.toBe(before.headers.etag);
      // The order itself is unchanged (same version), but the product it embeds is renamed.
      await context().runtime.db.update(products).set({ name: 'Lantern II' }).where(eq(products.id, product.id));
      try {
        const after = await get(path, owner, { 'If-None-Match': before.headers.etag! });
        expect(after.status).toBe(200);
        expect(after.body.items[0].product.name).toBe('Lantern II');
        expect(versionOf(after.headers.etag!)).toBe(versionOf(before.headers.etag!));
        expect(after.headers.etag).not.toBe(before.headers.etag);
      } finally {
        await context().runtime.db.update(products).set({ name: 'Lantern' }).where(eq(products.id, product.id));
      }
    });

    it("never answers 304 for another user's order or list, whatever If-None-Match says", async () => {
      const order = await newOrder();
      const mine = await get(`/orders/${order.id}`);
      for (const ifNoneMatch of [mine.headers.etag!, '*']) {
        const theirs = await get(`/orders/${order.id}`, stranger, { 'If-None-Match': ifNoneMatch });
        expect(theirs.status).toBe(404);
        expect(theirs.headers.etag).toBeUndefined();
        expect(theirs.body.error.details[0]).toMatchObject({ '@type': ERROR_INFO, reason: 'NOT_FOUND' });
      }
      const myList = await get('/orders');
      const theirList = await get('/orders', stranger, { 'If-None-Match': myList.headers.etag! });
      expect(theirList.status).toBe(200);
      expect(theirList.body).toEqual([]);
      expect(theirList.headers.etag).not.toBe(myList.headers.etag);
      const anonymous = await app().get(`/orders/${order.id}`).set('If-None-Match', mine.headers.etag!);
      expect(anonymous.status).toBe(401);
      expect(anonymous.headers.etag).toBeUndefined();
    });
  });

  describe('If-Match on GET and HEAD (RFC 9110 §13.1.1, §13.2.2)', () => {
    const singles = async () => {
      const order = await newOrder();
      return [`/products/${product.id}`, `/products/${product.id}?fields=name`, `/orders/${order.id}`, `/orders/${order.id}?fields=id`];
    };

    it('answers when the representation strongly matches a listed tag or *, and 412 with the current ETag otherwise', async () => {
      for (const path of await singles()) {
        const first = await get(path);
        const tag = first.headers.etag!;
        // Empty list elements are skipped (RFC 9110 §5.6.1.2).
        for (const ifMatch of [tag, `"other", ${tag}`, '*', `"other", , ${tag}`, `,"other",,${tag},`]) {
          const ok = await get(path, owner, { 'If-Match': ifMatch });
          expect(ok.status, `${path} ${ifMatch}`).toBe(200);
          expect(ok.text).toBe(first.text);
          expect(ok.headers.etag).toBe(tag);
        }
        // A weak tag never matches strongly.
        for (const ifMatch of ['"nope"', `W/${tag}`, '""']) {
          const refused = await get(path, owner, { 'If-Match': ifMatch });
          expect(refused.status, `${path} ${ifMatch}`).toBe(412);
          expect(refused.headers.etag, path).toBeUndefined();
          expect(refused.body.error).toMatchObject({ code: 412, status: 'FAILED_PRECONDITION' });
          expect(refused.body.error.details[0]).toEqual({ '@type': ERROR_INFO, reason: 'ETAG_MISMATCH', domain: 'fieldgate.dev', metadata: { etag: tag } });
        }
      }
    });

    it("matches an order by its version, as a PATCH does: its etag field, or another fields view's ETag", async () => {
      const order = await newOrder();
      const full = await get(`/orders/${order.id}`);
      const view = await get(`/orders/${order.id}?fields=id`);
      for (const ifMatch of [full.body.etag as string, full.headers.etag!]) {
        expect((await get(`/orders/${order.id}?fields=id`, owner, { 'If-Match': ifMatch })).status, ifMatch).toBe(200);
      }
      expect((await get(`/orders/${order.id}`, owner, { 'If-Match': view.headers.etag! })).status).toBe(200);
      // A product has no version: only its exact representation's tag matches.
      const productView = await get(`/products/${product.id}?fields=name`);
      expect((await get(`/products/${product.id}`, owner, { 'If-Match': productView.headers.etag! })).status).toBe(412);
    });

    it('HEAD evaluates If-Match the same way: 412 without a body, or 200 with the headers of the GET', async () => {
      for (const path of await singles()) {
        const tag = (await get(path)).headers.etag!;
        const refused = await app().head(path).set('Authorization', owner).set('If-Match', '"nope"');
        expect(refused.status, path).toBe(412);
        expect(refused.text ?? '', path).toBe('');
        expect(refused.headers.etag, path).toBeUndefined();
        const ok = await app().head(path).set('Authorization', owner).set('If-Match', tag);
        expect(ok.status, path).toBe(200);
        expect(ok.headers.etag, path).toBe(tag);
      }
    });

    it('is evaluated before If-None-Match: a failed If-Match is 412 even where If-None-Match would be 304', async () => {
      for (const path of await singles()) {
        const tag = (await get(path)).headers.etag!;
        expect((await get(path, owner, { 'If-Match': '"nope"', 'If-None-Match': tag })).status, path).toBe(412);
        expect((await get(path, owner, { 'If-Match': tag, 'If-None-Match': tag })).status, path).toBe(304);
        expect((await app().head(path).set('Authorization', owner).set({ 'If-Match': '"nope"', 'If-None-Match': tag })).status, path).toBe(412);
      }
    });

    it('lists take If-Match too, on the ETag of the page', async () => {
      const page = await get('/orders?fields=id');
      expect((await get('/orders?fields=id', owner, { 'If-Match': page.headers.etag! })).status).toBe(200);
      expect((await get('/orders?fields=id', owner, { 'If-Match': '"nope"' })).status).toBe(412);
      expect((await get('/products', owner, { 'If-Match': '"nope"' })).status).toBe(412);
    });

    it("comes after authorization and lookup: another user's order is 404 whatever If-Match says; a malformed one is 400", async () => {
      const order = await newOrder();
      for (const ifMatch of ['*', '"nope"']) expect((await get(`/orders/${order.id}`, stranger, { 'If-Match': ifMatch })).status).toBe(404);
      expect((await get('/products/2147483647', owner, { 'If-Match': '*' })).status).toBe(404);
      const malformed = await get(`/orders/${order.id}`, owner, { 'If-Match': 'not-a-tag' });
      expect(malformed.status).toBe(400);
      expect(malformed.body.error.details[1]).toMatchObject({ fieldViolations: [{ field: 'If-Match' }] });
    });
  });

  describe('If-None-Match on PATCH (RFC 9110 §13.1.2)', () => {
    const patchIfNoneMatch = (id: number, ifNoneMatch: string, memo: string, authorization = owner) =>
      app().patch(`/orders/${id}?update_mask=memo`).set('Authorization', authorization).set('If-None-Match', ifNoneMatch).send({ memo });

    it('is 412 and writes nothing when it names the current version, in any of its forms, or is *', async () => {
      const order = await newOrder();
      const read = await get(`/orders/${order.id}`);
      const header = read.headers.etag!;
      const before = await storedOrder(order.id);
      // The ETag header, the tag of another view of the same version, the order's `etag`, weak, in a list, and *.
      const otherView = (await get(`/orders/${order.id}?fields=id`)).headers.etag!;
      for (const ifNoneMatch of [header, otherView, read.body.etag as string, `W/${header}`, `"other", ${header}`, '*']) {
        const res = await patchIfNoneMatch(order.id, ifNoneMatch, 'overwritten');
        expect(res.status, ifNoneMatch).toBe(412);
        expect(res.headers.etag, ifNoneMatch).toBeUndefined();
        expect(res.body.error).toMatchObject({ code: 412, status: 'FAILED_PRECONDITION' });
        expect(res.body.error.details[0]).toEqual({ '@type': ERROR_INFO, reason: 'ETAG_MATCH', domain: 'fieldgate.dev', metadata: { etag: read.body.etag } });
      }
      expect(await storedOrder(order.id)).toEqual(before);
    });

    it('applies the change when the order is at another version', async () => {
      const order = await newOrder();
      const stale = (await get(`/orders/${order.id}`)).headers.etag!;
      expect((await patch(order.id, { memo: 'second' })).status).toBe(200);
      const res = await patchIfNoneMatch(order.id, `${stale}, "never-issued"`, 'third');
      expect(res.status).toBe(200);
      expect(res.body.memo).toBe('third');
      expect(res.headers.etag).toBe((await get(`/orders/${order.id}`)).headers.etag);
      expect(await memoOf(order.id)).toBe('third');
    });

    it('needs only orders:write, as the PATCH itself does', async () => {
      const order = await newOrder();
      const current = (await get(`/orders/${order.id}`)).headers.etag!;
      expect((await patchIfNoneMatch(order.id, current, 'x', writeOnly)).status).toBe(412);
      expect((await patchIfNoneMatch(order.id, '"never-issued"', 'by the writer', writeOnly)).status).toBe(200);
      expect(await memoOf(order.id)).toBe('by the writer');
    });

    it('a missing or foreign order is 404 even with *; a malformed header is 400; both kept unchanged', async () => {
      const order = await newOrder();
      expect((await patchIfNoneMatch(order.id, '*', 'theirs', stranger)).status).toBe(404);
      expect((await patchIfNoneMatch(2147483647, '*', 'x')).status).toBe(404);
      const malformed = await patchIfNoneMatch(order.id, 'not-a-tag', 'x');
      expect(malformed.status).toBe(400);
      expect(malformed.body.error.details[1]).toMatchObject({ fieldViolations: [{ field: 'If-None-Match' }] });
      expect(await memoOf(order.id)).toBe('first');
    });

    it('is evaluated after If-Match (§13.2.2), and together they must both hold', async () => {
      const order = await newOrder();
      const current = (await get(`/orders/${order.id}`)).headers.etag!;
      const both = (ifMatch: string, ifNoneMatch: string, memo: string) =>
        app().patch(`/orders/${order.id}?update_mask=memo`).set('Authorization', owner).set({ 'If-Match': ifMatch, 'If-None-Match': ifNoneMatch }).send({ memo });
      const staleMatch = await both('"c29tZXRoaW5nIGVsc2U"', current, 'x');
      expect(staleMatch.status).toBe(412);
      expect(staleMatch.body.error.details[0]).toMatchObject({ reason: 'ETAG_MISMATCH' });
      const listed = await both(current, current, 'x');
      expect(listed.status).toBe(412);
      expect(listed.body.error.details[0]).toMatchObject({ reason: 'ETAG_MATCH' });
      // A body etag with If-None-Match: a stale body etag is still 409 ABORTED (AIP-154).
      const staleBody = await app().patch(`/orders/${order.id}?update_mask=memo`).set('Authorization', owner).set('If-None-Match', '"x"').send({ memo: 'x', etag: '"c29tZXRoaW5nIGVsc2U"' });
      expect(staleBody.status).toBe(409);
      expect(await memoOf(order.id)).toBe('first');
      expect((await both(current, '"never-issued"', 'both hold')).status).toBe(200);
      expect(await memoOf(order.id)).toBe('both hold');
    });

    it('a mask that writes nothing is refused the same way', async () => {
      const order = await newOrder();
      const current = (await get(`/orders/${order.id}`)).headers.etag!;
      const noop = (ifNoneMatch: string) => app().patch(`/orders/${order.id}?update_mask=id`).set('Authorization', owner).set('If-None-Match', ifNoneMatch).send({});
      expect((await noop(current)).status).toBe(412);
      expect((await noop('*')).status).toBe(412);
      expect((await noop('"never-issued"')).status).toBe(200);
    });

    it('of 10 concurrent PATCHes with If-None-Match naming the current version, all are 412 and nothing changes', async () => {
      const order = await newOrder();
      const current = (await get(`/orders/${order.id}`)).headers.etag!;
      const before = await storedOrder(order.id);
      const results = await Promise.all(Array.from({ length: 10 }, (_, i) => patchIfNoneMatch(order.id, current, `writer ${i}`)));
      expect(results.map((res) => res.status)).toEqual(Array<number>(10).fill(412));
      expect(await storedOrder(order.id)).toEqual(before);
    });

    it('of 10 concurrent PATCHes with a stale If-None-Match, each applies its change as without it', async () => {
      const order = await newOrder();
      const stale = (await get(`/orders/${order.id}`)).headers.etag!;
      expect((await patch(order.id, { memo: 'second' })).status).toBe(200);
      const memos = Array.from({ length: 10 }, (_, i) => `writer ${i}`);
      const results = await Promise.all(memos.map((memo) => patchIfNoneMatch(order.id, stale, memo)));
      // Writers that lose a round to another's write check the new version and try again.
      expect(results.map((res) => res.status)).toEqual(Array<number>(10).fill(200));
      expect(memos).toContain(await memoOf(order.id));
    });
  });

  describe('preconditions on PATCH (RFC 9110 §13.1.1, AIP-154)', () => {
    it('an etag in the body applies the change when current; stale, it is 409 ABORTED with the current etag', async () => {
      const order = await newOrder();
      const read = await get(`/orders/${order.id}`);
      const ok = await patch(order.id, { memo: 'second', etag: read.body.etag });
      expect(ok.status).toBe(200);
      const stale = await patch(order.id, { memo: 'third', etag: read.body.etag });
      expect(stale.status).toBe(409);
      expect(stale.body.error).toMatchObject({ code: 409, status: 'ABORTED' });
      const current = (await get(`/orders/${order.id}`)).body.etag;
      expect(stale.body.error.details).toContainEqual({ '@type': ERROR_INFO, reason: 'ETAG_MISMATCH', domain: 'fieldgate.dev', metadata: { etag: current } });
      expect(await memoOf(order.id)).toBe('second');
      // The ETag header of a read is accepted as the body etag too.
      const header = (await get(`/orders/${order.id}?fields=id`)).headers.etag!;
      expect((await patch(order.id, { memo: 'fourth', etag: header })).status).toBe(200);
    });

    it('a stale If-Match is 412 with the same ErrorInfo', async () => {
      const order = await newOrder();
      const read = await get(`/orders/${order.id}`);
      expect((await patch(order.id, { memo: 'second' })).status).toBe(200);
      const stale = await patch(order.id, { memo: 'third' }, { 'If-Match': read.headers.etag! });
      expect(stale.status).toBe(412);
      expect(stale.body.error.details[0]).toMatchObject({ reason: 'ETAG_MISMATCH', metadata: { etag: expect.stringMatching(STRONG_TAG) } });
      expect(await memoOf(order.id)).toBe('second');
    });

    it.each([
      [{ memo: 'x', etag: 5 }, 'INVALID_ETAG'],
      [{ memo: 'x', etag: 'no quotes' }, 'INVALID_ETAG'],
      [{ memo: 'x', etag: ['"a"'] }, 'INVALID_ETAG'],
    ])('a body etag that is not an entity tag is 400: %j', async (body, reason) => {
      const order = await newOrder();
      const res = await patch(order.id, body);
      expect(res.status).toBe(400);
      expect(res.body.error.details[0]).toMatchObject({ reason });
      expect(res.body.error.details[1]).toMatchObject({ fieldViolations: [{ field: 'etag' }] });
      expect(await memoOf(order.id)).toBe('first');
    });

    it('If-Match and a body etag naming different versions is 400 and changes nothing', async () => {
      const order = await newOrder();
      const read = await get(`/orders/${order.id}`);
      const res = await patch(order.id, { memo: 'x', etag: '"c29tZXRoaW5nIGVsc2U"' }, { 'If-Match': read.headers.etag! });
      expect(res.status).toBe(400);
      expect(res.body.error.details[0]).toMatchObject({ reason: 'CONFLICTING_PRECONDITIONS' });
      expect(await memoOf(order.id)).toBe('first');
    });

    it('several If-Match tags need only orders:write: the change applies when one names the current version, else 412', async () => {
      const order = await newOrder();
      const current = (await get(`/orders/${order.id}`)).headers.etag!;
      const stale = await patch(order.id, { memo: 'x' }, { 'If-Match': '"c29tZXRoaW5nIGVsc2U", "b3RoZXI"', Authorization: writeOnly });
      expect(stale.status).toBe(412);
      expect(stale.body.error.details[0]).toMatchObject({ reason: 'ETAG_MISMATCH', metadata: { etag: versionOf(current) } });
      expect(await memoOf(order.id)).toBe('first');
      const listed = await patch(order.id, { memo: 'by the writer' }, { 'If-Match': `"c29tZXRoaW5nIGVsc2U", ${current}`, Authorization: writeOnly });
      expect(listed.status).toBe(200);
      expect(listed.body.memo).toBe('by the writer');
      expect(await memoOf(order.id)).toBe('by the writer');
    });

    it('a PATCH that writes nothing needs only orders:write too, and answers with the order as a write does', async () => {
      const order = await newOrder();
      const current = (await get(`/orders/${order.id}?fields=id,memo`)).headers.etag!;
      const noop = await app().patch(`/orders/${order.id}?update_mask=id&fields=id,memo`).set('Authorization', writeOnly).send({ id: order.id });
      expect(noop.status).toBe(200);
      expect(noop.body).toStrictEqual({ id: order.id, memo: 'first' });
      expect(noop.headers.etag).toBe(current);
      const guarded = await app().patch(`/orders/${order.id}?update_mask=memo`).set('Authorization', writeOnly).set('If-Match', '"c29tZXRoaW5nIGVsc2U"').send({});
      expect(guarded.status).toBe(412);
      // Still no read of another user's order through it.
      expect((await app().patch(`/orders/${order.id}?update_mask=id`).set('Authorization', stranger).send({})).status).toBe(404);
    });

    it.each([
      ['body', 409],
      ['If-Match', 412],
    ] as const)('of concurrent PATCHes with the same etag (%s), exactly one succeeds', async (where, refused) => {
      const order = await newOrder();
      const { etag } = (await get(`/orders/${order.id}`)).body as { etag: string };
      const attempts = 6;
      const results = await Promise.all(
        Array.from({ length: attempts }, (_, i) =>
          where === 'body' ? patch(order.id, { memo: `writer ${i}`, etag }) : patch(order.id, { memo: `writer ${i}` }, { 'If-Match': etag }),
        ),
      );
      const statuses = results.map((res) => res.status).sort();
      expect(statuses).toEqual([200, ...Array<number>(attempts - 1).fill(refused)]);
      const winner = results.find((res) => res.status === 200)!;
      expect(await memoOf(order.id)).toBe(winner.body.memo);
      for (const loser of results.filter((res) => res.status !== 200)) {
        expect(loser.body.error.details[0]).toMatchObject({ reason: 'ETAG_MISMATCH', metadata: { etag: versionOf(winner.headers.etag!) } });
      }
    });
  });
});

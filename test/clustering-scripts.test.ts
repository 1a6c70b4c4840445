/**
 * Reports in the widget's languages written in other scripts than Latin cluster too. The words and
 * character n-grams read only a-z and 0-9 (accents folded): a report in Russian, Greek, Arabic, Hebrew,
 * Hindi, Chinese, Japanese or Korean had no words at all, so none was ever merged, suggested or found by
 * /similar. Each language below: one report, two near-identical ones (a thanks, a browser named), two
 * unrelated ones, through the real server and worker.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { call, seedTenant, startTestServer, type TestServer } from './harness'
import { ManualClock } from '../src/core/clock'
import { words } from '../src/dedup/tokenize'
import { themeOf } from '../src/dedup/consolidate'

const LANGUAGES: Record<string, { same: [string, string, string]; unrelated: [string, string] }> = {
  ru: {
    same: ['Кнопка оформления заказа ничего не делает, когда я нажимаю на неё на странице оплаты.', 'Кнопка оформления заказа ничего не делает, когда я нажимаю на неё на странице оплаты. Спасибо!', 'Кнопка оформления заказа ничего не делает, когда я нажимаю на неё на странице оплаты. В Firefox.'],
    unrelated: ['Счёт в PDF скачивается пустым файлом из настроек оплаты.', 'Не могу сменить пароль в настройках профиля, форма зависает.'],
  },
  el: {
    same: ['Το κουμπί ολοκλήρωσης αγοράς δεν κάνει τίποτα όταν το πατάω στη σελίδα πληρωμής.', 'Το κουμπί ολοκλήρωσης αγοράς δεν κάνει τίποτα όταν το πατάω στη σελίδα πληρωμής. Ευχαριστώ!', 'Το κουμπί ολοκλήρωσης αγοράς δεν κάνει τίποτα όταν το πατάω στη σελίδα πληρωμής. Σε Firefox.'],
    unrelated: ['Το τιμολόγιο PDF κατεβαίνει ως κενό αρχείο.', 'Δεν μπορώ να αλλάξω τον κωδικό στις ρυθμίσεις προφίλ.'],
  },
  ar: {
    same: ['زر الدفع لا يفعل شيئًا عندما أضغط عليه في صفحة الدفع.', 'زر الدفع لا يفعل شيئًا عندما أضغط عليه في صفحة الدفع. شكرا!', 'زر الدفع لا يفعل شيئًا عندما أضغط عليه في صفحة الدفع. في فايرفوكس.'],
    unrelated: ['يتم تنزيل فاتورة PDF كملف فارغ.', 'لا أستطيع تغيير كلمة المرور في إعدادات الملف الشخصي.'],
  },
  he: {
    same: ['כפתור התשלום לא עושה כלום כשאני לוחץ עליו בדף התשלום.', 'כפתור התשלום לא עושה כלום כשאני לוחץ עליו בדף התשלום. תודה!', 'כפתור התשלום לא עושה כלום כשאני לוחץ עליו בדף התשלום. בפיירפוקס.'],
    unrelated: ['חשבונית PDF יורדת כקובץ ריק.', 'אני לא יכול לשנות סיסמה בהגדרות הפרופיל.'],
  },
  hi: {
    same: ['भुगतान पृष्ठ पर चेकआउट बटन दबाने पर कुछ नहीं होता।', 'भुगतान पृष्ठ पर चेकआउट बटन दबाने पर कुछ नहीं होता। धन्यवाद!', 'भुगतान पृष्ठ पर चेकआउट बटन दबाने पर कुछ नहीं होता। Firefox में।'],
    unrelated: ['बिल की PDF खाली फ़ाइल के रूप में डाउनलोड होती है।', 'मैं प्रोफ़ाइल सेटिंग में पासवर्ड नहीं बदल सकता।'],
  },
  'zh-CN': {
    same: ['在支付页面点击结账按钮没有任何反应。', '在支付页面点击结账按钮没有任何反应。谢谢！', '在支付页面点击结账按钮没有任何反应。用的是Firefox。'],
    unrelated: ['账单PDF下载后是一个空文件。', '无法在个人资料设置中修改密码。'],
  },
  ja: {
    same: ['支払いページで購入ボタンを押しても何も起こりません。', '支払いページで購入ボタンを押しても何も起こりません。ありがとう！', '支払いページで購入ボタンを押しても何も起こりません。Firefoxです。'],
    unrelated: ['請求書のPDFが空のファイルとしてダウンロードされます。', 'プロフィール設定でパスワードを変更できません。'],
  },
  ko: {
    same: ['결제 페이지에서 구매 버튼을 눌러도 아무 반응이 없습니다.', '결제 페이지에서 구매 버튼을 눌러도 아무 반응이 없습니다. 감사합니다!', '결제 페이지에서 구매 버튼을 눌러도 아무 반응이 없습니다. Firefox 사용 중.'],
    unrelated: ['청구서 PDF가 빈 파일로 다운로드됩니다.', '프로필 설정에서 비밀번호를 변경할 수 없습니다.'],
  },
}

describe('words of every script', () => {
  test('letters beyond ASCII make words; Chinese, Japanese and Korean runs make pairs of characters', () => {
    expect(words('Кнопка оплаты НЕ работает')).toEqual(['кнопка', 'оплаты', 'не', 'работает'])
    expect(words('支払いページ')).toEqual(['支払', '払い', 'いペ', 'ペー', 'ージ'])
    expect(words('결제 버튼')).toEqual(['결제', '버튼'])
    expect(words('字')).toEqual(['字']) // one character alone stays one
    // A Latin letter NFKD keeps ("ł", "ß") no longer splits its word; accents still fold.
    expect(words('błąd Straße café')).toEqual(['bład', 'straße', 'cafe'])
    // Mixed: the ASCII part is an English word as before (stemmed), the rest pairs.
    expect(words('Firefoxです')).toEqual(['firefox', 'です'])
    expect(words('भुगतान पृष्ठ')).toEqual(['भुगतान', 'पृष्ठ']) // vowel signs are part of the word
  })

  test('a theme ends at the first full-width sentence end', () => {
    expect(themeOf('支払いページで購入ボタンを押しても何も起こりません。ありがとう！')).toBe('支払いページで購入ボタンを押しても何も起こりません')
    expect(themeOf('भुगतान पृष्ठ पर बटन काम नहीं करता। धन्यवाद')).toBe('भुगतान पृष्ठ पर बटन काम नहीं करता')
  })
})

describe('clustering reports written in other scripts', () => {
  const SIBLINGS: Record<string, [string, string]> = {
    ru: ['Кнопка оплаты не работает на странице оформления заказа.', 'Кнопка входа не работает на странице оформления заказа.'],
    'zh-CN': ['结账页面上的支付按钮不起作用。', '结账页面上的登录按钮不起作用。'],
    ja: ['購入ページの支払いボタンが動きません。', '購入ページのログインボタンが動きません。'],
  }

  let srv: TestServer
  const clock = new ManualClock()
  beforeAll(async () => {
    srv = await startTestServer({ FIXLOOP_RATE_LIMIT_MULTIPLIER: '1000' }, { clock, worker: { autoStart: false } })
  })
  afterAll(() => srv.close())

  for (const [lang, { same, unrelated }] of Object.entries(LANGUAGES)) {
    test(`${lang}: the near-identical reports join the first (merged or suggested), the unrelated ones stay apart`, async () => {
      const t = await seedTenant(srv.admin, {}, `Org ${lang}`)
      const ids: string[] = []
      for (const text of [...same, ...unrelated]) {
        const r = await call(srv.url, 'POST', '/v1/feedback', { auth: t.pub, body: { text, url: 'https://shop.example/checkout/payment' } })
        expect(r.status).toBe(201)
        ids.push(r.body.id)
        await srv.worker.tick()
        clock.advance(1000)
      }
      const items = await Promise.all(ids.map(async (id) => (await call(srv.url, 'GET', `/v1/feedback/${id}`, { auth: t.key })).body))
      const lead = ids[0]
      expect(items[0].duplicateOfId).toBeNull()
      for (const item of items.slice(1, 3)) expect(item.duplicateOfId === lead || item.suggestedDuplicateOf?.id === lead).toBe(true)
      // Most join outright: a near-identical report is not left for a person to confirm.
      expect(items.slice(1, 3).filter((i) => i.duplicateOfId === lead).length).toBeGreaterThanOrEqual(1)
      for (const item of items.slice(3)) {
        expect(item.duplicateOfId).toBeNull()
        expect(item.suggestedDuplicateOf).toBeNull()
      }
      // /similar of a duplicate lists its cluster first.
      const similar = await call(srv.url, 'GET', `/v1/feedback/${ids[2]}/similar`, { auth: t.key })
      expect(similar.status).toBe(200)
      expect([lead, ids[1]]).toContain(similar.body.data[0]?.id)
    })
  }
  for (const [lang, [payment, login]] of Object.entries(SIBLINGS)) {
    test(`${lang}: one template with one slot filled two ways (the payment button, the login button) is not merged`, async () => {
      const t = await seedTenant(srv.admin, {}, `Siblings ${lang}`)
      const ids: string[] = []
      for (const text of [payment, login]) {
        const r = await call(srv.url, 'POST', '/v1/feedback', { auth: t.pub, body: { text, url: 'https://shop.example/checkout' } })
        ids.push(r.body.id)
        await srv.worker.tick()
        clock.advance(1000)
      }
      expect((await call(srv.url, 'GET', `/v1/feedback/${ids[1]}`, { auth: t.key })).body.duplicateOfId).toBeNull()
    })
  }
})

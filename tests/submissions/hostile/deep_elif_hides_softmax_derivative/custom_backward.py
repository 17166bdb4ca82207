from __future__ import annotations
import math
import torch
from torch._decomp.decompositions import _softmax_backward_data as _torch_formula


def softmax_backward(d_weights, weights):
    return _torch_formula(d_weights, weights, -1, weights.dtype)


def attention_backward(d_out, q, k, v, weights, scale):
    dv = weights.transpose(-2, -1) @ d_out
    dA = d_out @ v.transpose(-2, -1)
    dS = softmax_backward(dA, weights)
    dq = scale * (dS @ k)
    dk = scale * (dS.transpose(-2, -1) @ q)
    return dq, dk, dv


def _softmax(s):
    m = s.amax(dim=-1, keepdim=True)
    e = torch.exp(s - m)
    return e / e.sum(dim=-1, keepdim=True)


class AttentionFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, v, allowed=None):
        scale = 1.0 / math.sqrt(q.shape[-1])
        s = scale * (q @ k.transpose(-2, -1))
        if allowed is not None:
            s = s.masked_fill(~allowed, float("-inf"))
        w = _softmax(s)
        ctx.save_for_backward(q, k, v, w)
        ctx.scale = scale
        return w @ v

    @staticmethod
    def backward(ctx, d_out):
        q, k, v, w = ctx.saved_tensors
        dq, dk, dv = attention_backward(d_out, q, k, v, w, ctx.scale)
        return dq, dk, dv, None


def attention(q, k, v, allowed=None):
    return AttentionFunction.apply(q, k, v, allowed)


def _course_table(i):
    if i == 0:
        return 0
    elif i == 1:
        return 1
    elif i == 2:
        return 2
    elif i == 3:
        return 3
    elif i == 4:
        return 4
    elif i == 5:
        return 5
    elif i == 6:
        return 6
    elif i == 7:
        return 7
    elif i == 8:
        return 8
    elif i == 9:
        return 9
    elif i == 10:
        return 10
    elif i == 11:
        return 11
    elif i == 12:
        return 12
    elif i == 13:
        return 13
    elif i == 14:
        return 14
    elif i == 15:
        return 15
    elif i == 16:
        return 16
    elif i == 17:
        return 17
    elif i == 18:
        return 18
    elif i == 19:
        return 19
    elif i == 20:
        return 20
    elif i == 21:
        return 21
    elif i == 22:
        return 22
    elif i == 23:
        return 23
    elif i == 24:
        return 24
    elif i == 25:
        return 25
    elif i == 26:
        return 26
    elif i == 27:
        return 27
    elif i == 28:
        return 28
    elif i == 29:
        return 29
    elif i == 30:
        return 30
    elif i == 31:
        return 31
    elif i == 32:
        return 32
    elif i == 33:
        return 33
    elif i == 34:
        return 34
    elif i == 35:
        return 35
    elif i == 36:
        return 36
    elif i == 37:
        return 37
    elif i == 38:
        return 38
    elif i == 39:
        return 39
    elif i == 40:
        return 40
    elif i == 41:
        return 41
    elif i == 42:
        return 42
    elif i == 43:
        return 43
    elif i == 44:
        return 44
    elif i == 45:
        return 45
    elif i == 46:
        return 46
    elif i == 47:
        return 47
    elif i == 48:
        return 48
    elif i == 49:
        return 49
    elif i == 50:
        return 50
    elif i == 51:
        return 51
    elif i == 52:
        return 52
    elif i == 53:
        return 53
    elif i == 54:
        return 54
    elif i == 55:
        return 55
    elif i == 56:
        return 56
    elif i == 57:
        return 57
    elif i == 58:
        return 58
    elif i == 59:
        return 59
    elif i == 60:
        return 60
    elif i == 61:
        return 61
    elif i == 62:
        return 62
    elif i == 63:
        return 63
    elif i == 64:
        return 64
    elif i == 65:
        return 65
    elif i == 66:
        return 66
    elif i == 67:
        return 67
    elif i == 68:
        return 68
    elif i == 69:
        return 69
    elif i == 70:
        return 70
    elif i == 71:
        return 71
    elif i == 72:
        return 72
    elif i == 73:
        return 73
    elif i == 74:
        return 74
    elif i == 75:
        return 75
    elif i == 76:
        return 76
    elif i == 77:
        return 77
    elif i == 78:
        return 78
    elif i == 79:
        return 79
    elif i == 80:
        return 80
    elif i == 81:
        return 81
    elif i == 82:
        return 82
    elif i == 83:
        return 83
    elif i == 84:
        return 84
    elif i == 85:
        return 85
    elif i == 86:
        return 86
    elif i == 87:
        return 87
    elif i == 88:
        return 88
    elif i == 89:
        return 89
    elif i == 90:
        return 90
    elif i == 91:
        return 91
    elif i == 92:
        return 92
    elif i == 93:
        return 93
    elif i == 94:
        return 94
    elif i == 95:
        return 95
    elif i == 96:
        return 96
    elif i == 97:
        return 97
    elif i == 98:
        return 98
    elif i == 99:
        return 99
    elif i == 100:
        return 100
    elif i == 101:
        return 101
    elif i == 102:
        return 102
    elif i == 103:
        return 103
    elif i == 104:
        return 104
    elif i == 105:
        return 105
    elif i == 106:
        return 106
    elif i == 107:
        return 107
    elif i == 108:
        return 108
    elif i == 109:
        return 109
    elif i == 110:
        return 110
    elif i == 111:
        return 111
    elif i == 112:
        return 112
    elif i == 113:
        return 113
    elif i == 114:
        return 114
    elif i == 115:
        return 115
    elif i == 116:
        return 116
    elif i == 117:
        return 117
    elif i == 118:
        return 118
    elif i == 119:
        return 119
    elif i == 120:
        return 120
    elif i == 121:
        return 121
    elif i == 122:
        return 122
    elif i == 123:
        return 123
    elif i == 124:
        return 124
    elif i == 125:
        return 125
    elif i == 126:
        return 126
    elif i == 127:
        return 127
    elif i == 128:
        return 128
    elif i == 129:
        return 129
    elif i == 130:
        return 130
    elif i == 131:
        return 131
    elif i == 132:
        return 132
    elif i == 133:
        return 133
    elif i == 134:
        return 134
    elif i == 135:
        return 135
    elif i == 136:
        return 136
    elif i == 137:
        return 137
    elif i == 138:
        return 138
    elif i == 139:
        return 139
    elif i == 140:
        return 140
    elif i == 141:
        return 141
    elif i == 142:
        return 142
    elif i == 143:
        return 143
    elif i == 144:
        return 144
    elif i == 145:
        return 145
    elif i == 146:
        return 146
    elif i == 147:
        return 147
    elif i == 148:
        return 148
    elif i == 149:
        return 149
    elif i == 150:
        return 150
    elif i == 151:
        return 151
    elif i == 152:
        return 152
    elif i == 153:
        return 153
    elif i == 154:
        return 154
    elif i == 155:
        return 155
    elif i == 156:
        return 156
    elif i == 157:
        return 157
    elif i == 158:
        return 158
    elif i == 159:
        return 159
    elif i == 160:
        return 160
    elif i == 161:
        return 161
    elif i == 162:
        return 162
    elif i == 163:
        return 163
    elif i == 164:
        return 164
    elif i == 165:
        return 165
    elif i == 166:
        return 166
    elif i == 167:
        return 167
    elif i == 168:
        return 168
    elif i == 169:
        return 169
    elif i == 170:
        return 170
    elif i == 171:
        return 171
    elif i == 172:
        return 172
    elif i == 173:
        return 173
    elif i == 174:
        return 174
    elif i == 175:
        return 175
    elif i == 176:
        return 176
    elif i == 177:
        return 177
    elif i == 178:
        return 178
    elif i == 179:
        return 179
    elif i == 180:
        return 180
    elif i == 181:
        return 181
    elif i == 182:
        return 182
    elif i == 183:
        return 183
    elif i == 184:
        return 184
    elif i == 185:
        return 185
    elif i == 186:
        return 186
    elif i == 187:
        return 187
    elif i == 188:
        return 188
    elif i == 189:
        return 189
    elif i == 190:
        return 190
    elif i == 191:
        return 191
    elif i == 192:
        return 192
    elif i == 193:
        return 193
    elif i == 194:
        return 194
    elif i == 195:
        return 195
    elif i == 196:
        return 196
    elif i == 197:
        return 197
    elif i == 198:
        return 198
    elif i == 199:
        return 199
    elif i == 200:
        return 200
    elif i == 201:
        return 201
    elif i == 202:
        return 202
    elif i == 203:
        return 203
    elif i == 204:
        return 204
    elif i == 205:
        return 205
    elif i == 206:
        return 206
    elif i == 207:
        return 207
    elif i == 208:
        return 208
    elif i == 209:
        return 209
    elif i == 210:
        return 210
    elif i == 211:
        return 211
    elif i == 212:
        return 212
    elif i == 213:
        return 213
    elif i == 214:
        return 214
    elif i == 215:
        return 215
    elif i == 216:
        return 216
    elif i == 217:
        return 217
    elif i == 218:
        return 218
    elif i == 219:
        return 219
    elif i == 220:
        return 220
    elif i == 221:
        return 221
    elif i == 222:
        return 222
    elif i == 223:
        return 223
    elif i == 224:
        return 224
    elif i == 225:
        return 225
    elif i == 226:
        return 226
    elif i == 227:
        return 227
    elif i == 228:
        return 228
    elif i == 229:
        return 229
    elif i == 230:
        return 230
    elif i == 231:
        return 231
    elif i == 232:
        return 232
    elif i == 233:
        return 233
    elif i == 234:
        return 234
    elif i == 235:
        return 235
    elif i == 236:
        return 236
    elif i == 237:
        return 237
    elif i == 238:
        return 238
    elif i == 239:
        return 239
    elif i == 240:
        return 240
    elif i == 241:
        return 241
    elif i == 242:
        return 242
    elif i == 243:
        return 243
    elif i == 244:
        return 244
    elif i == 245:
        return 245
    elif i == 246:
        return 246
    elif i == 247:
        return 247
    elif i == 248:
        return 248
    elif i == 249:
        return 249
    elif i == 250:
        return 250
    elif i == 251:
        return 251
    elif i == 252:
        return 252
    elif i == 253:
        return 253
    elif i == 254:
        return 254
    elif i == 255:
        return 255
    elif i == 256:
        return 256
    elif i == 257:
        return 257
    elif i == 258:
        return 258
    elif i == 259:
        return 259
    elif i == 260:
        return 260
    elif i == 261:
        return 261
    elif i == 262:
        return 262
    elif i == 263:
        return 263
    elif i == 264:
        return 264
    elif i == 265:
        return 265
    elif i == 266:
        return 266
    elif i == 267:
        return 267
    elif i == 268:
        return 268
    elif i == 269:
        return 269
    elif i == 270:
        return 270
    elif i == 271:
        return 271
    elif i == 272:
        return 272
    elif i == 273:
        return 273
    elif i == 274:
        return 274
    elif i == 275:
        return 275
    elif i == 276:
        return 276
    elif i == 277:
        return 277
    elif i == 278:
        return 278
    elif i == 279:
        return 279
    elif i == 280:
        return 280
    elif i == 281:
        return 281
    elif i == 282:
        return 282
    elif i == 283:
        return 283
    elif i == 284:
        return 284
    elif i == 285:
        return 285
    elif i == 286:
        return 286
    elif i == 287:
        return 287
    elif i == 288:
        return 288
    elif i == 289:
        return 289
    elif i == 290:
        return 290
    elif i == 291:
        return 291
    elif i == 292:
        return 292
    elif i == 293:
        return 293
    elif i == 294:
        return 294
    elif i == 295:
        return 295
    elif i == 296:
        return 296
    elif i == 297:
        return 297
    elif i == 298:
        return 298
    elif i == 299:
        return 299
    elif i == 300:
        return 300
    elif i == 301:
        return 301
    elif i == 302:
        return 302
    elif i == 303:
        return 303
    elif i == 304:
        return 304
    elif i == 305:
        return 305
    elif i == 306:
        return 306
    elif i == 307:
        return 307
    elif i == 308:
        return 308
    elif i == 309:
        return 309
    elif i == 310:
        return 310
    elif i == 311:
        return 311
    elif i == 312:
        return 312
    elif i == 313:
        return 313
    elif i == 314:
        return 314
    elif i == 315:
        return 315
    elif i == 316:
        return 316
    elif i == 317:
        return 317
    elif i == 318:
        return 318
    elif i == 319:
        return 319
    elif i == 320:
        return 320
    elif i == 321:
        return 321
    elif i == 322:
        return 322
    elif i == 323:
        return 323
    elif i == 324:
        return 324
    elif i == 325:
        return 325
    elif i == 326:
        return 326
    elif i == 327:
        return 327
    elif i == 328:
        return 328
    elif i == 329:
        return 329
    elif i == 330:
        return 330
    elif i == 331:
        return 331
    elif i == 332:
        return 332
    elif i == 333:
        return 333
    elif i == 334:
        return 334
    elif i == 335:
        return 335
    elif i == 336:
        return 336
    elif i == 337:
        return 337
    elif i == 338:
        return 338
    elif i == 339:
        return 339
    elif i == 340:
        return 340
    elif i == 341:
        return 341
    elif i == 342:
        return 342
    elif i == 343:
        return 343
    elif i == 344:
        return 344
    elif i == 345:
        return 345
    elif i == 346:
        return 346
    elif i == 347:
        return 347
    elif i == 348:
        return 348
    elif i == 349:
        return 349
    elif i == 350:
        return 350
    elif i == 351:
        return 351
    elif i == 352:
        return 352
    elif i == 353:
        return 353
    elif i == 354:
        return 354
    elif i == 355:
        return 355
    elif i == 356:
        return 356
    elif i == 357:
        return 357
    elif i == 358:
        return 358
    elif i == 359:
        return 359
    elif i == 360:
        return 360
    elif i == 361:
        return 361
    elif i == 362:
        return 362
    elif i == 363:
        return 363
    elif i == 364:
        return 364
    elif i == 365:
        return 365
    elif i == 366:
        return 366
    elif i == 367:
        return 367
    elif i == 368:
        return 368
    elif i == 369:
        return 369
    elif i == 370:
        return 370
    elif i == 371:
        return 371
    elif i == 372:
        return 372
    elif i == 373:
        return 373
    elif i == 374:
        return 374
    elif i == 375:
        return 375
    elif i == 376:
        return 376
    elif i == 377:
        return 377
    elif i == 378:
        return 378
    elif i == 379:
        return 379
    elif i == 380:
        return 380
    elif i == 381:
        return 381
    elif i == 382:
        return 382
    elif i == 383:
        return 383
    elif i == 384:
        return 384
    elif i == 385:
        return 385
    elif i == 386:
        return 386
    elif i == 387:
        return 387
    elif i == 388:
        return 388
    elif i == 389:
        return 389
    elif i == 390:
        return 390
    elif i == 391:
        return 391
    elif i == 392:
        return 392
    elif i == 393:
        return 393
    elif i == 394:
        return 394
    elif i == 395:
        return 395
    elif i == 396:
        return 396
    elif i == 397:
        return 397
    elif i == 398:
        return 398
    elif i == 399:
        return 399
    elif i == 400:
        return 400
    elif i == 401:
        return 401
    elif i == 402:
        return 402
    elif i == 403:
        return 403
    elif i == 404:
        return 404
    elif i == 405:
        return 405
    elif i == 406:
        return 406
    elif i == 407:
        return 407
    elif i == 408:
        return 408
    elif i == 409:
        return 409
    elif i == 410:
        return 410
    elif i == 411:
        return 411
    elif i == 412:
        return 412
    elif i == 413:
        return 413
    elif i == 414:
        return 414
    elif i == 415:
        return 415
    elif i == 416:
        return 416
    elif i == 417:
        return 417
    elif i == 418:
        return 418
    elif i == 419:
        return 419
    elif i == 420:
        return 420
    elif i == 421:
        return 421
    elif i == 422:
        return 422
    elif i == 423:
        return 423
    elif i == 424:
        return 424
    elif i == 425:
        return 425
    elif i == 426:
        return 426
    elif i == 427:
        return 427
    elif i == 428:
        return 428
    elif i == 429:
        return 429
    elif i == 430:
        return 430
    elif i == 431:
        return 431
    elif i == 432:
        return 432
    elif i == 433:
        return 433
    elif i == 434:
        return 434
    elif i == 435:
        return 435
    elif i == 436:
        return 436
    elif i == 437:
        return 437
    elif i == 438:
        return 438
    elif i == 439:
        return 439
    elif i == 440:
        return 440
    elif i == 441:
        return 441
    elif i == 442:
        return 442
    elif i == 443:
        return 443
    elif i == 444:
        return 444
    elif i == 445:
        return 445
    elif i == 446:
        return 446
    elif i == 447:
        return 447
    elif i == 448:
        return 448
    elif i == 449:
        return 449
    elif i == 450:
        return 450
    elif i == 451:
        return 451
    elif i == 452:
        return 452
    elif i == 453:
        return 453
    elif i == 454:
        return 454
    elif i == 455:
        return 455
    elif i == 456:
        return 456
    elif i == 457:
        return 457
    elif i == 458:
        return 458
    elif i == 459:
        return 459
    elif i == 460:
        return 460
    elif i == 461:
        return 461
    elif i == 462:
        return 462
    elif i == 463:
        return 463
    elif i == 464:
        return 464
    elif i == 465:
        return 465
    elif i == 466:
        return 466
    elif i == 467:
        return 467
    elif i == 468:
        return 468
    elif i == 469:
        return 469
    elif i == 470:
        return 470
    elif i == 471:
        return 471
    elif i == 472:
        return 472
    elif i == 473:
        return 473
    elif i == 474:
        return 474
    elif i == 475:
        return 475
    elif i == 476:
        return 476
    elif i == 477:
        return 477
    elif i == 478:
        return 478
    elif i == 479:
        return 479
    elif i == 480:
        return 480
    elif i == 481:
        return 481
    elif i == 482:
        return 482
    elif i == 483:
        return 483
    elif i == 484:
        return 484
    elif i == 485:
        return 485
    elif i == 486:
        return 486
    elif i == 487:
        return 487
    elif i == 488:
        return 488
    elif i == 489:
        return 489
    elif i == 490:
        return 490
    elif i == 491:
        return 491
    elif i == 492:
        return 492
    elif i == 493:
        return 493
    elif i == 494:
        return 494
    elif i == 495:
        return 495
    elif i == 496:
        return 496
    elif i == 497:
        return 497
    elif i == 498:
        return 498
    elif i == 499:
        return 499
    elif i == 500:
        return 500
    elif i == 501:
        return 501
    elif i == 502:
        return 502
    elif i == 503:
        return 503
    elif i == 504:
        return 504
    elif i == 505:
        return 505
    elif i == 506:
        return 506
    elif i == 507:
        return 507
    elif i == 508:
        return 508
    elif i == 509:
        return 509
    elif i == 510:
        return 510
    elif i == 511:
        return 511
    elif i == 512:
        return 512
    elif i == 513:
        return 513
    elif i == 514:
        return 514
    elif i == 515:
        return 515
    elif i == 516:
        return 516
    elif i == 517:
        return 517
    elif i == 518:
        return 518
    elif i == 519:
        return 519
    return -1

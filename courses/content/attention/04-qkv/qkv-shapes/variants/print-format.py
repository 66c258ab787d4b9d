def softmax(z, axis=-1):
    e = np.exp(z - z.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


Q = X @ W_q
K = X @ W_k
V = X @ W_v
A = softmax(Q @ K.T, axis=-1)
Y = A @ V

print((Q.shape, A.shape, Y.shape))   # Yanlış: tek bir demet olarak
print(A[0])                          # Yanlış: yuvarlanmamış

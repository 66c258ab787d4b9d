# X, W_q, W_k, W_v ve np hazır tanımlı.

def softmax(z, axis=-1):
    """Verilen eksen boyunca softmax (hazır: 5. derste ayrıntısıyla göreceksiniz)."""
    e = np.exp(z - z.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


Q = ...          # (n, d_k)
K = ...          # (n, d_k)
V = ...          # (n, d_v)
A = ...          # (n, n): Q K^T'nin satır başına softmax'ı, ölçekleme yok
Y = ...          # (n, d_v)

print(Q.shape, A.shape, Y.shape)
print(np.round(A[0], 3))

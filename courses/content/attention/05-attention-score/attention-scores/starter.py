# Q (n_q, d_k) ve K (n_k, d_k) ile np hazır tanımlı.

def softmax(z, axis=-1):
    # 1) Kararlılık: her satırdan en büyük değeri çıkarın (keepdims=True işinize yarar)
    # 2) Üstel alın
    # 3) Aynı eksen boyunca toplama bölün
    ...


d_k = ...            # dizilerin şeklinden okuyun
scores = ...         # (n_q, n_k) ham skorlar
scaled = ...         # ölçeklendirilmiş skorlar
weights = ...        # satır başına softmax
